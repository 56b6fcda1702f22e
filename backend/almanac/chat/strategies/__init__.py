"""How a query is answered. `direct`: one model runs the turn loop (`chat/turn.py`). `boost`: a
planner model guides an executor model that has the tools (`boost.py`). `collaborate`: a primary
model answers and asks a helper model when it is stuck (`collaborate.py`)."""

from typing import Literal

Strategy = Literal["direct", "boost", "collaborate"]
STRATEGIES: tuple[Strategy, ...] = ("direct", "boost", "collaborate")
