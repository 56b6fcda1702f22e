"""Users and API keys."""
