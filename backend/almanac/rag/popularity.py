"""How much installed code uses each API: a prior for the APIs a developer most likely means.

A question such as "delete a directory and everything inside it" shares words with hundreds of passages
(`anthropic`'s memory tool's `delete`, a database's `delete`…); the answer, `shutil.rmtree`, is the one that
code everywhere calls. While the index reads each module's source (`local_docs.module_api`),
`references` lists the qualified names the module's code uses — `json.loads` for `import json;
json.loads(…)`, `urllib.parse.urlparse` for `from urllib.parse import urlparse`, `datetime.datetime.now`
for `from datetime import datetime; datetime.now()` — and `Popularity` counts, for each API, how many modules use it.

An API is looked up by its package and its last name (`asyncio.tasks.gather`, where it is defined, is
`asyncio.gather` where it is used), with its class for a method: the same key either way. Calls on
instances (`proc.communicate()`) cannot be resolved without types and are not counted. The score is
`log(1 + modules) / log(1 + SATURATION)`, capped at 1: thirty modules using an API is as good a sign as a
thousand.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

SATURATION = 30  # modules using an API for the full score (chosen on the dev half of bench/doc_questions.jsonl)
_DOTTED = re.compile(r"[A-Za-z_][\w.]*")


def references(tree: ast.Module, source: str) -> frozenset[str]:
    """The qualified names a module's code uses through its absolute imports (each once). The imports
    come from the module's statements; their uses from its text (a dotted name after a bound name), which
    is many times faster than walking every expression and differs only in names mentioned in comments."""
    bound: dict[str, str] = {}  # local name → qualified name
    used: set[str] = set()
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".", 1)[0]
                    bound[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    used.add(f"{node.module}.{alias.name}")
    if bound:
        for dotted in set(_DOTTED.findall(source)):
            first, _, chain = dotted.rstrip(".").partition(".")
            if first in bound:
                used.add(f"{bound[first]}.{chain}" if chain else bound[first])
    return frozenset(used)


def _statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones (in functions, classes, `if`, `try`…) included; no expressions. With a
    stack, not recursion: a long `elif` chain nests as deep as it is long."""
    stack = list(body)[::-1]
    while stack:
        node = stack.pop()
        yield node
        for name in ("finalbody", "handlers", "orelse", "body"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                stack.extend(reversed(inner))


def key(name: str) -> str | None:
    """The lookup key of a dotted name: its package and last name (`asyncio.tasks.gather` → `asyncio.gather`),
    with its class for a class's attribute (`datetime.datetime.now`, `asyncio.runners.Runner.run` →
    `asyncio.Runner.run`: a method is not the module function of the same name)."""
    parts = name.split(".")
    if len(parts) < 2:
        return None
    if len(parts) > 2 and parts[-2][:1].isupper():
        return f"{parts[0]}.{parts[-2]}.{parts[-1]}"
    return f"{parts[0]}.{parts[-1]}"


@dataclass(frozen=True)
class Popularity:
    """The number of indexed modules using each API (by `key`)."""

    modules: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def count(cls, uses: Iterable[frozenset[str]]) -> Popularity:
        """From each module's `references`; a module counts once per key."""
        counts: Counter[str] = Counter()
        for names in uses:
            counts.update({k for name in names if (k := key(name))})
        return cls(dict(counts))

    def score(self, symbol: str) -> float:
        """0–1: how widely the API `symbol` documents is used (0 for a name no indexed code uses)."""
        k = key(symbol)
        used = self.modules.get(k, 0) if k else 0
        return min(1.0, math.log1p(used) / math.log1p(SATURATION))

    def to_bytes(self) -> bytes:
        return json.dumps(self.modules, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes | None) -> Popularity:
        """The stored counts; none (an index stored before counts existed) gives every API 0."""
        if not data:
            return cls()
        loaded = json.loads(data)
        return cls({str(k): int(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {})
