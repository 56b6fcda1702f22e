"""Text conventions every layer shares (pure, imports nothing of ours): the data marker that
separates instructions from data in what a model reads (`marking.py`), and the cleaning that makes
any text storable and sendable (`clean.py`). Storage, memory, tools and the gateway sit above it."""
