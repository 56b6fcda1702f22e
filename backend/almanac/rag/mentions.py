"""Which APIs a library's own documentation keeps calling: its centre, as its authors show it.

Installed code is the best sign of what developers use (`popularity.py`), but it is thin for most packages:
few installed programs call `sqlalchemy.create_engine`, `uvicorn.run` or `BaseModel.model_dump` (a call on an
instance cannot be resolved at all). A library's documentation shows the same thing from inside: the examples
and prose of `Session`, `Connection`, `MetaData` and a hundred other SQLAlchemy APIs write
`engine = create_engine(…)`; pydantic's write `model.model_dump()`. So, for each API, `Mentions` counts how
many *other* APIs of its package have a passage calling it by name (`name(`, bare, through a variable or
qualified by the package), and scores it on a log scale like `popularity.Popularity.score`.

The count says what is central *within* a library, not across libraries (a package with long docstrings
mentions everything more): the ranking uses it only for the passages of the library a question is about
(`ranking.arrange`'s `focus`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from almanac.rag.chunking import Chunk
from almanac.rag.popularity import api_key
from almanac.rag.ranking import symbol_of

SATURATION = 10  # other APIs calling an API for the full score (chosen on the dev half of bench/doc_questions.jsonl)
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\(")


def mention_key(package: str, name: str) -> str:
    """What a mention and an API are matched by: the package and the last name (`sqlalchemy.create_engine`;
    `pydantic.model_dump` for `pydantic.main.BaseModel.model_dump`, whatever the instance was called)."""
    return f"{package}.{name}"


@dataclass(frozen=True)
class Mentions:
    """The number of other APIs of the same package whose passages call each API (by `mention_key`)."""

    callers: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def count(cls, chunks: Iterable[Chunk]) -> Mentions:
        chunks = list(chunks)
        symbols = [symbol_of(chunk) for chunk in chunks]
        packages = {symbol.split(".", 1)[0] for symbol in symbols if symbol}
        callers: dict[str, set[str]] = {}
        for chunk, symbol in zip(chunks, symbols, strict=True):
            if not symbol:
                continue
            package, own = symbol.split(".", 1)[0], symbol.rsplit(".", 1)[-1]
            caller = api_key(symbol)
            for match in _CALL.finditer(chunk.text):
                called = match.group(1).split(".")
                first, name = called[0], called[-1]
                if name == own or name.startswith("_") or len(name) < 3:
                    continue  # its own signature and examples, private helpers, `f(`
                # `sqlalchemy.create_engine(` names its package; `engine.connect(`, `create_engine(` are this one's
                named = first if first in packages and len(called) > 1 else package
                callers.setdefault(mention_key(named, name), set()).add(caller)
        return cls({k: len(v) for k, v in callers.items()})

    def score(self, symbol: str) -> float:
        """0–1: how many other APIs of its package call the API `symbol` documents (0 for a one-part name)."""
        parts = symbol.split(".")
        if len(parts) < 2:
            return 0.0
        called = self.callers.get(mention_key(parts[0], parts[-1]), 0)
        return min(1.0, math.log1p(called) / math.log1p(SATURATION))
