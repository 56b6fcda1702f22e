"""Alembic migrations (run through `almanac.storage.migrate`)."""
