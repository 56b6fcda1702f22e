"""Almanac: a documentation-aware, credit-metered chat service for developers."""

__version__ = "0.1.0"
