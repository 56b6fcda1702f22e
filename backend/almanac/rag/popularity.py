"""How much installed code uses each API: a prior for the APIs a developer most likely means.

A question such as "delete a directory and everything inside it" shares words with hundreds of passages
(`anthropic`'s memory tool's `delete`, a database's `delete`…); the answer, `shutil.rmtree`, is the one that
code everywhere calls. While the index reads each module's source (`local_docs.module_api`),
`usage` lists the qualified names the module's code uses — `json.loads` for `import json;
json.loads(…)`, `urllib.parse.urlparse` for `from urllib.parse import urlparse`, `datetime.datetime.now`
for `from datetime import datetime; datetime.now()`, and the builtins it calls by name (`sorted`, `isinstance`, as
`builtins.sorted`: the builtins are APIs too, and none of them is imported) — and `Popularity` counts, for each API,
how many modules use it — and, apart, how many modules of *other* packages use it (`foreign`): a package calling
its own helpers (langchain_core its `runnables.utils.gather_with_concurrency`, mypy its `checker.flatten`, through
absolute imports; relative ones are not counted at all) says what is central to that package, not what developers
use.

An API is looked up by its package and its last name (`asyncio.tasks.gather`, where it is defined, is
`asyncio.gather` where it is used), with its class for a method: the same key either way. Calls on
instances (`proc.communicate()`) cannot be resolved without types and are not counted. The score is
`log(1 + modules) / log(1 + SATURATION)`, capped at 1: thirty modules using an API is as good a sign as a
thousand.

The code around an API's uses also says what it is for, often in a developer's words rather than its
docstring's: the functions calling `shutil.which` are named `find_executable` or `get_uv_path`, those
calling `urlencode` build query strings. `usage` also collects, per API a module's functions use, the using
function's name and docstring summary, the identifiers of the line and the comments just above it;
`characteristic` keeps, per API, the `WORDS` words most particular to its callers, which the local index
searches as one more field of the API's passages (`fields.py`).
"""

from __future__ import annotations

import ast
import bisect
import builtins
import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from almanac.rag.bm25 import tokenize

WORDS = 12  # characteristic words kept per API (`characteristic`)
SATURATION = 30  # modules using an API for the full score (chosen on the dev half of bench/doc_questions.jsonl)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_BARE_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")
# the builtin functions and classes code calls by their bare names (`sorted`, `isinstance`, `open`; not the
# exceptions, which code raises and catches rather than uses)
BUILTIN_FUNCTIONS = frozenset(
    name
    for name, value in vars(builtins).items()
    if callable(value)
    and not name.startswith("_")
    and not (isinstance(value, type) and issubclass(value, BaseException))
)


def usage(tree: ast.Module, source: str) -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    """What a module's code uses and how it talks about it, from one walk of its statements and one scan of
    its text (many times faster than walking every expression; it differs only in names mentioned in comments
    and strings):

    - the qualified names it uses through its absolute imports (each once): `json.loads` for `import json;
      json.loads(…)`;
    - for each API (by `key`) its functions use, the words around those uses: the using function's name and
      docstring summary, the identifiers of the line that uses it and the comments on the two lines above —
      how code that calls `shutil.which` talks about it (`find_executable`, "locate the binary on PATH")."""
    bound: dict[str, str] = {}  # local name → qualified name
    used: set[str] = set()
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
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
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.append(node)  # outer before inner: an inner function's lines are its own
    used |= builtin_uses(source, bound)
    if not bound:
        return frozenset(used), {}
    uses = re.compile(r"(?<![\w.])(?:" + "|".join(map(re.escape, bound)) + r")\b[\w.]*")
    starts = [0, *(m.end() for m in re.finditer("\n", source))]  # where each line begins
    owner = [-1] * len(starts)  # line → the innermost function it belongs to (body lines only)
    for number, node in enumerate(functions):
        if node.end_lineno is not None:
            owner[node.lineno : node.end_lineno] = [number] * (node.end_lineno - node.lineno)
    lines = source.split("\n")
    by_line: dict[int, set[str]] = {}
    for match in uses.finditer(source):
        name = _resolve(match.group(), bound)
        if name is None:
            continue
        used.add(name)
        line = bisect.bisect_right(starts, match.start()) - 1
        if owner[line] >= 0 and (k := key(name)) and "#" not in source[starts[line] : match.start()]:
            by_line.setdefault(line, set()).add(k)
    found: dict[str, set[str]] = {}
    heads: dict[int, list[str]] = {}
    for line, keys in by_line.items():
        number = owner[line]
        if number not in heads:
            node = functions[number]
            summary = (ast.get_docstring(node) or "").strip().split("\n", 1)[0]
            heads[number] = [*_IDENT.findall(node.name), *_IDENT.findall(summary)]
        words = [*heads[number], *_IDENT.findall(lines[line].partition("#")[0])]
        for above in lines[max(functions[number].lineno, line - 2) : line]:
            _, hash_, comment = above.partition("#")
            if hash_:
                words.extend(_IDENT.findall(comment))
        for k in keys:
            found.setdefault(k, set()).update(words)
    return frozenset(used), {k: frozenset(words) for k, words in found.items()}


def builtin_uses(source: str, bound: Mapping[str, str]) -> set[str]:
    """The builtins a module's code calls by their bare names, as `builtins.sorted` (a name the module binds
    by an import is not the builtin). Calls of the builtin types' methods are not counted: without types,
    `.copy()` or `.get()` could be any class's, and counting them for `list.copy` or `dict.get` put those first
    for "make a deep copy" and "return the keys of the most common"."""
    return {
        f"builtins.{name}"
        for match in _BARE_CALL.finditer(source)
        if (name := match.group(1)) in BUILTIN_FUNCTIONS and name not in bound
    }


def _resolve(dotted: str, bound: Mapping[str, str]) -> str | None:
    first, _, chain = dotted.rstrip(".").partition(".")
    if first not in bound:
        return None
    return f"{bound[first]}.{chain}" if chain else bound[first]


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


def api_key(symbol: str) -> str:
    """What identifies an API across the modules documenting it: its `key` (`asyncio.tasks.Task` and
    `asyncio.Task` are one class), or a one-part name as it is (the builtin `isinstance`)."""
    return key(symbol) or symbol


@dataclass(frozen=True)
class Popularity:
    """The number of indexed modules using each API (by `key`), and the words characteristic of the code
    around its uses (`usage`), as text."""

    modules: Mapping[str, int] = field(default_factory=dict)
    words: Mapping[str, str] = field(default_factory=dict)
    # the modules of other packages using each API: a package calling its own helpers (langchain_core its
    # `gather_with_concurrency`, mypy its `checker.flatten`) says what is central to it, not what developers use
    foreign: Mapping[str, int] | None = None

    @classmethod
    def count(
        cls,
        uses: Iterable[frozenset[str]],
        around: Iterable[Mapping[str, frozenset[str]]] = (),
        names: Iterable[str] | None = None,
    ) -> Popularity:
        """From each module's `usage` (names, words), with each module's dotted name in `names` when known (its
        package's own APIs then count apart, `foreign`); a module counts once per key (and per word)."""
        counts: Counter[str] = Counter()
        foreign: Counter[str] = Counter()
        for used, module in zip(uses, names if names is not None else itertools.repeat(""), strict=False):
            keys = {k for name in used if (k := key(name))}
            counts.update(keys)
            own = module.split(".", 1)[0]
            foreign.update(k for k in keys if k.split(".", 1)[0] != own)
        return cls(dict(counts), characteristic(around), dict(foreign) if names is not None else None)

    def score(self, symbol: str, *, foreign: bool = False) -> float:
        """0–1: how widely the API `symbol` documents is used (0 for a name no indexed code uses); with `foreign`,
        by other packages' code only."""
        k = key(symbol) or (f"builtins.{symbol}" if symbol in BUILTIN_FUNCTIONS else None)
        counts = self.foreign if foreign and self.foreign is not None else self.modules
        used = counts.get(k, 0) if k else 0
        return min(1.0, math.log1p(used) / math.log1p(SATURATION))

    def to_bytes(self) -> bytes:
        stored = {"modules": self.modules, "words": self.words, "foreign": self.foreign}
        return json.dumps(stored, separators=(",", ":"), sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes | None) -> Popularity:
        """The stored counts; none (an index stored before counts existed) gives every API 0."""
        if not data:
            return cls()
        loaded = json.loads(data)
        if not isinstance(loaded, dict):
            return cls()
        if "modules" not in loaded:  # stored before the words: the counts alone
            loaded = {"modules": loaded}
        modules, words, foreign = loaded.get("modules", {}), loaded.get("words", {}), loaded.get("foreign")
        return cls(
            {str(k): int(v) for k, v in modules.items()} if isinstance(modules, dict) else {},
            {str(k): str(v) for k, v in words.items()} if isinstance(words, dict) else {},
            {str(k): int(v) for k, v in foreign.items()} if isinstance(foreign, dict) else None,
        )


def characteristic(around: Iterable[Mapping[str, frozenset[str]]], limit: int = WORDS) -> dict[str, str]:
    """For each API, the `limit` words of the code around its uses that say most about it: by the number
    of modules using it with the word, times the word's rarity among all APIs' contexts (so `self`,
    `value`, `result` drop out). Words are compared stemmed; each is kept in its shortest spelling."""
    per_key: dict[str, Counter[str]] = {}
    spelling: dict[str, str] = {}
    own: dict[str, set[str]] = {}  # each key's own name's stems, computed once
    for module in around:
        for k, words in module.items():
            stems = set()
            for word in words:
                for stem, surface in _stems(word):
                    stems.add(stem)
                    if len(surface) < len(spelling.get(stem, surface + "_")):
                        spelling[stem] = surface
            if k not in own:
                own[k] = _own_stems(k)
            per_key.setdefault(k, Counter()).update(stems - own[k])
    spread: Counter[str] = Counter()
    for counter in per_key.values():
        spread.update(counter.keys())
    total = len(per_key)
    chosen: dict[str, str] = {}
    for k, counter in per_key.items():
        weighed = sorted(counter, key=lambda stem: (-counter[stem] * math.log(total / spread[stem]), stem))
        chosen[k] = " ".join(spelling[stem] for stem in weighed[:limit])
    return {k: text for k, text in chosen.items() if text}


def _stems(word: str) -> list[tuple[str, str]]:
    """(stem, lower-case word) for a word and each part of an identifier (as BM25 tokenises)."""
    parts = [word.lower(), *(p.lower() for p in _PART.findall(word))] if "_" in word or not word.islower() else [word]
    return [(stems[0], part) for part in dict.fromkeys(parts) if (stems := tokenize(part))]


def _own_stems(k: str) -> set[str]:
    return {stem for part in k.split(".") for stem, _ in _stems(part)}
