"""Step 1 of the pipeline: which library a documentation request is about, and on what topic.

The chat model does it with a small structured prompt (JSON answer, parsed leniently); offline,
rules do it: an explicit Context7 ID, a known library name, or a name in a telling position
("in X", "X's", "using X", "`X`", "import X"). The topic is the request without the library
and the question's boilerplate.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from almanac.llm.base import Model, ModelError, complete
from almanac.llm.messages import Message, ModelRequest
from almanac.rag.select import normalise_name

log = logging.getLogger(__name__)
LIBRARY_ID = re.compile(r"(?<![\w.])/[\w.\-]+/[\w.\-]+(?:[@/][\w.\-]+)?")
_NAME = r"([A-Za-z][\w.\-]*[A-Za-z0-9]|[A-Za-z])"
_PATTERNS = [
    re.compile(r"`" + _NAME + r"`"),
    re.compile(r"\b(?:from|import)\s+" + _NAME),
    re.compile(_NAME + r"(?:'s|’s)\s", re.I),
    re.compile(_NAME + r"\s+(?:library|package|module|framework|sdk|docs|documentation|api)\b", re.I),
    re.compile(r"\b(?:in|using|with|for|of|about|use)\s+" + _NAME, re.I),
]
_BOILERPLATE = re.compile(
    r"\b(how (do|can|should|would) (i|you|we)|how to|what is|what are|what's|is there a way to|please|"
    r"can you|could you|show me|explain|tell me about|documentation|docs|library|package|module|the|a|an|"
    r"in|using|with|for|of|about|use)\b",
    re.I,
)
_COMMON = {
    "python",
    "code",
    "example",
    "examples",
    "it",
    "this",
    "that",
    "my",
    "your",
    "function",
    "class",
    "way",
    "file",
    "data",
    "error",
    "errors",
    "test",
    "tests",
    "api",
    "app",
    "application",
    "project",
    "docs",
    "request",
    "there",
    "which",
    "what",
    "how",
    "when",
    "why",
    "one",
    "them",
    "me",
    "i",
}


@dataclass(frozen=True)
class ParsedQuery:
    library: str | None
    topic: str


class QueryParser(Protocol):
    async def parse(self, query: str) -> ParsedQuery:
        """The library (None if none is evident) and the topic of a documentation request."""
        ...


def topic_of(query: str, library: str | None) -> str:
    """The request without the library's name and the question's boilerplate."""
    text = query
    if library:
        text = re.sub(re.escape(library), " ", text, flags=re.I)
    text = _BOILERPLATE.sub(" ", text)
    text = re.sub(r"[`'\"?!]+", " ", text)
    topic = " ".join(text.split()).strip(" .,:;")
    return topic or query.strip()


def rule_library(query: str, known: Iterable[str] = ()) -> str | None:
    """The library a request names, by rules (see module docstring)."""
    explicit = LIBRARY_ID.search(query)
    if explicit:
        return explicit.group(0)
    names = {normalise_name(name): name for name in known if name}
    words = re.findall(r"[A-Za-z][\w.\-]*[A-Za-z0-9]|[A-Za-z]", query)
    matches = [w for w in words if normalise_name(w) in names and w.lower() not in _COMMON]
    if matches:
        return max(matches, key=len)
    for pattern in _PATTERNS:
        for match in pattern.finditer(query):
            name = match.group(1)
            if name.lower() not in _COMMON and not _BOILERPLATE.fullmatch(name):
                return name
    return None


def guess_library(query: str) -> str | None:
    """A last-resort guess: the first word that is not question boilerplate or a common word."""
    for word in re.findall(r"[A-Za-z][\w.\-]*[A-Za-z0-9]", query):
        if word.lower() not in _COMMON and not _BOILERPLATE.fullmatch(word) and len(word) > 2:
            return word
    return None


class RuleQueryParser:
    """Offline parsing; `known` lists the library names the doc source has (may be empty)."""

    def __init__(self, known: Callable[[], Iterable[str]] = lambda: ()) -> None:
        self._known = known

    async def parse(self, query: str) -> ParsedQuery:
        library = rule_library(query, self._known())
        return ParsedQuery(library, topic_of(query, library))


_PROMPT = (
    "You extract search parameters from a developer's documentation request. Reply with only a JSON "
    'object: {"library": "<the library, framework or tool the request is about, or null>", '
    '"topic": "<what to look up in its documentation, in a few words>"}.'
)


class ModelQueryParser:
    """Parsing by the chat model, falling back to rules when its answer is unusable."""

    def __init__(self, model: Model, rules: RuleQueryParser | None = None) -> None:
        self.model = model
        self._rules = rules or RuleQueryParser()

    async def parse(self, query: str) -> ParsedQuery:
        try:
            response = await complete(
                self.model, ModelRequest(_PROMPT, (Message.user(query[:4000]),), max_tokens=120, purpose="utility")
            )
            parsed = parse_json_object(response.text)
        except ModelError:
            log.warning("query parsing by the model failed; using rules")
            parsed = None
        if not parsed:
            return await self._rules.parse(query)
        named = parsed.get("library")
        library = (
            named.strip() if isinstance(named, str) and named.strip().lower() not in ("", "null", "none") else None
        )
        topic = str(parsed.get("topic") or "").strip() or topic_of(query, library)
        return ParsedQuery(library, topic)


def parse_json_object(text: str) -> dict[str, object] | None:
    """The first JSON object in a model's answer (code fences and chatter around it are ignored)."""
    start = text.find("{")
    while start != -1:
        depth = 0
        for end in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                try:
                    value = json.loads(text[start : end + 1])
                except ValueError:
                    break
                return value if isinstance(value, dict) else None
        start = text.find("{", start + 1)
    return None
