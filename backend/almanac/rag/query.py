"""Step 1 of the pipeline: which library a documentation request is about, and on what topic.

The chat model does it with a small structured prompt (JSON answer, parsed leniently), and names the APIs it expects
to answer the request (`shutil.which` for "find the full path of an executable"), which the search then looks for by
name; offline, rules do it: an explicit Context7 ID, a known library name (a standard module's subject word too:
"regex" is `re`, `SUBJECTS`), or a name in a telling position ("in X", "X's", "using X", "`X`", "import X"). The
topic is the request without the library (and its possessive: "sqlalchemy's pool" → "pool"), the question's
boilerplate, connectives opening a sentence ("And how do I…"), requests to the assistant ("can you", "please", "tell
me") and requests to consult the documentation ("check the X docs", "look it up in the documentation"). The model's
answer is cleaned the same way, so neither path lets such filler into the topic. Before any of it, the question
loses how it is framed (`request_of`: "What's the best way to…", "I'm not sure which function to use", "any
ideas?", a closing "in Python"), for every step after: the ranking reads the question's words as API names
("call", "help", "function" are names too) and the reorder embeds the question.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
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
    re.compile(_NAME + r"\s+(?:library|package|module|framework|sdk|docs|documentation|api|reference|manual)\b", re.I),
    re.compile(r"\b(?:in|using|with|for|of|about|use)\s+" + _NAME, re.I),
]
_API_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){0,6}")
MAX_APIS = 3
_POSSESSIVE = re.compile(r"(?<=\w)(?:'s|’s)\b", re.I)
_DOCS = r"(?:(?:official|api|online)\s+)?(?:docs|documentation|manual|api reference|reference)"
# Requests to consult the documentation: a verb such as "check", "read", "search" only with the documentation as
# its object ("check the sqlalchemy docs": the verb goes, the library's name stays for the pipeline to take or
# keep); elsewhere it is the subject ("check if a file exists", "read a CSV file", "search a string for a
# pattern", "find the path of an executable").
_FILLER = re.compile(
    r"\b(look (?:it |this |that |them )?up|"
    r"(?:look|check(?: out)?|consult|search|browse|read|see|refer to|according to|find (?:it|this|that|out))"
    r"(?:\s+(?:at|in|into|through|on))?(?=\s+(?:(?:the|its|their|your)\s+)?(?:[\w.\-]+\s+){0,2}" + _DOCS + r"\b)|"
    r"what do(?:es)? (?:the )?(?:docs|documentation) say|" + _DOCS + r")\b",
    re.I,
)
_BOILERPLATE = re.compile(
    r"\b(how (do|can|should|would) (i|you|we)|how to|what is|what are|what's|is there a way to|please|"
    r"can you|could you|show me|explain|tell me about|documentation|docs|official|library|package|module|the|a|an|"
    r"in|using|with|for|of|about|use|on|its|their|it|me|how|what|which|why|is|are|do|does)\b",
    re.I,
)
# A connective opening a sentence ("And how do I…", "So, what about…") ties the question to the last one, and a
# greeting or an announcement ("Hi! Quick question: …", "One more thing:") opens it; neither is a topic. A full stop
# inside code (`datetime.now()`, `self.then`) opens no sentence.
_OPENING = (
    r"(?:(?:hi|hello|hey)(?: there| all| everyone)?|(?:a |one )?(?:(?:quick|small|short|simple|another|one more) )?"
    r"question|one more thing)(?=\s*[,!.:—]|\s+-\s|\s+(?:how|what|why|where|which|can|could|is|are|do|does|i)\b)"
)
_CONNECTIVE = re.compile(
    r"(^|[.!?;:](?!\w)\s*)(?:(?:(?:and|also|so|then|but|or|now|next|ok(?:ay)?|well|plus|anyway|additionally|besides)\b,?"
    r"|" + _OPENING + r"\s*[,!.:—-]?)\s*)+",
    re.I,
)
# The asker's situation, told before the ask ("I'm writing a small script for work.", "In my project, …"): what they
# are building is no word of what they ask, but a name in it stays ("I'm building a flask app." keeps `flask`).
_SITUATION = re.compile(
    r"\b(?:(?:i(?:'m|’m| am)|we(?:'re|’re| are))\s+(?:currently\s+|now\s+)?"
    r"(?:writing|working on|building|developing|making|creating|coding)\s+(?:(?:a|an|my|our|some|this)\s+)?"
    r"(?:(?:small|simple|quick|little|new|tiny|personal|side|hobby|internal)\s+)*"
    r"(?P<name>(?:[\w.+-]+\s+)??)(?:script|program|project|app|application|tool|service|bot|website|codebase)s?"
    r"(?:\s+(?:for|at)\s+(?:work|my job|a client|school|class|fun))?(?=\s*[.!;])"
    r"|(?:in|for)\s+(?:my|our)\s+(?:project|app|application|script|code|codebase|work|job)\b,?)",
    re.I,
)
# Frustration that names nothing ("I tried a few things but nothing worked.", "I've been stuck on this for hours").
_VENTING = re.compile(
    r"\b(?:i(?:'ve|’ve| have)?\s+tried\s+(?:(?:a\s+few|several|many|some|a\s+lot\s+of|lots\s+of|different|various)\s+)?"
    r"(?:things|stuff|ways|approaches|options|everything)(?:\s+(?:already|so\s+far))?"
    r"|(?:but\s+)?(?:nothing|none\s+of\s+them)\s+(?:worked|works|helped|seems?\s+to\s+work)"
    r"|i(?:'ve|’ve| have)\s+been\s+stuck(?:\s+on\s+(?:this|it))?(?:\s+for\s+(?:hours|days|a\s+while|ages))?"
    r"|i\s+(?:can't|can’t|cannot)\s+figure\s+(?:it|this|that)\s+out)\b",
    re.I,
)
# Requests addressed to the assistant rather than words of the subject.
_INSTRUCTION = re.compile(
    r"\b(?:(?:can|could|would|will) you|please|thanks?(?: you)?|help me(?: with)?|tell me|show me|let me know|"
    r"walk me through|give me|i (?:want|need|would like|'d like) to(?: know)?|"
    r"i(?:'m| am) (?:trying|wondering)(?: to| how| if)?|i (?:have|got) to|"
    r"for me|(?:an? )?examples? of)\b",
    re.I,
)
# a pip requirement's version part: "fastapi==0.110", "pydantic>=2,<3", "numpy ~= 1.26"
_REQUIREMENT = re.compile(r"\s*(?:===?|~=|!=|>=?|<=?)\s*[\w.*+!-]+(?:\s*,\s*(?:===?|~=|!=|>=?|<=?)\s*[\w.*+!-]+)*\s*$")
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
    "look",
    "lookup",
    "check",
    "consult",
    "search",
    "read",
    "see",
    "refer",
    "according",
    "find",
    "up",
    "documentation",
    "manual",
    "reference",
    "official",
    "say",
    "says",
    "do",
    "does",
}


# What developers call a standard-library module's subject, when a package is named by the same word: "regex" in a
# question means regular expressions, the `re` module, far more often than the `regex` package that replaces it
# (which a question names as code, `regex`, or as "the regex module").
SUBJECTS = {"regex": "re", "regexes": "re", "regexp": "re", "regular expression": "re", "regular expressions": "re"}
_AS_PACKAGE = re.compile(r"\s*(?:`|library|package|module|pip)\b|`", re.I)


def _subject(query: str, words: Sequence[str], at: int) -> tuple[str, int] | None:
    """The module a question's words starting at `at` name by its subject (`SUBJECTS`), and how many words that
    took; None when they are no such words or name the package itself ("the regex module", "`regex`")."""
    for width in (2, 1):
        phrase = " ".join(words[at : at + width]).lower()
        if len(words[at : at + width]) == width and phrase in SUBJECTS:
            last = words[at + width - 1]
            after = query[query.find(last) + len(last) :] if last in query else ""
            before = query[: query.find(words[at])] if words[at] in query else ""
            if _AS_PACKAGE.match(after) or before.endswith("`"):
                return None
            return SUBJECTS[phrase], width
    return None


@dataclass(frozen=True)
class ParsedQuery:
    library: str | None
    topic: str
    apis: tuple[str, ...] = ()  # APIs the chat model expects to answer it (dotted names; a hint, never a filter)
    others: tuple[str, ...] = ()  # further libraries the question names (rules); the pipeline picks among them
    excluded: tuple[str, ...] = ()  # libraries the question asks to do without ("without argparse"; rules)


class QueryParser(Protocol):
    async def parse(self, query: str) -> ParsedQuery:
        """The library (None if none is evident) and the topic of a documentation request."""
        ...


# How a question is framed rather than what it asks: the kind of answer wanted ("the best way to", "is it possible
# to", "which function should I use"), doubt and appeals ("I'm not sure which…", "any ideas?", "pls help") — none
# names the subject, and their words ("function", "call", "help", "best") would match API names
_FRAMING = re.compile(
    r"\b(?:(?:what(?:'s|’s| is| are)\s+)?(?:the\s+|an?\s+)?(?:most\s+)?"
    r"(?:best|easiest|simplest|quickest|fastest|cleanest|right|correct|proper|recommended|preferred|idiomatic|"
    r"pythonic|standard|usual|common|good|better|efficient|elegant|modern|canonical)\s+"
    r"(?:way|ways|method|approach|practice|practices|solution)(?:\s+(?:to|for|of|in python))?|"
    r"is\s+(?:it|there)\s+(?:possible|a\s+way|any\s+way)\s+(?:to|for)|"
    r"is\s+there\s+(?:a|an|any)\s+(?:function|method|api|built-?in|class|module|library|package)\s+(?:to|for|that)|"
    r"i(?:'m|’m| am)\s+not\s+sure\s+(?:which|what|how|if|whether)(?:\s+(?:function|method|api|class|module|"
    r"library|one))?(?:\s+(?:to|i\s+should|should\s+i)\s+(?:use|call))?|"
    r"(?:which|what)\s+(?:function|method|api|class|module|library|package)s?\s+(?:should|do|can|could|would)\s+"
    r"(?:i|we|you)\s+(?:use|call)|"
    r"(?:which|what)\s+(?:function|method|api|class|module|library|package)s?\s+to\s+(?:use|call)|"
    r"what\s+(?:should|do|can|could|would)\s+(?:i|we)\s+(?:use|call)|"
    r"(?:any|some)\s+(?:ideas?|suggestions?|tips?|pointers?|help|advice)|"
    r"^\s*(?:(?:pls|plz|please)\s+)?help(?:\s+(?:me|needed|wanted))?\s*[:!,.\-—]|(?:pls|plz|please)\s+help\b|"
    r"\bhelp\s+(?:needed|wanted)\b|"
    r"^\s*(?:i\s+)?need\s+to|"
    r"^\s*(?:pls|plz)\b|,?\s*how\s*\?\s*$|"
    r"\s(?:in|with|using)\s+python(?:\s*3)?(?=\s*[?.!]?\s*$))",
    re.I,
)


# The frame of a pasted traceback: its header, each frame's file and line, and the lines joining chained errors —
# the `traceback` module is not what a pasted traceback asks about; its code lines and its error are kept, and of a
# frame's file the package it is in (`…/site-packages/httpx/_api.py` → httpx; the user's own files name none)
_TRACEBACK = re.compile(
    r"Traceback \(most recent call last\):|File \"(?P<path>[^\"\n]*)\", line \d+(?:, in [\w<>.]+)?|"
    r"During handling of the above exception, another exception occurred:|"
    r"The above exception was the direct cause of the following exception:",
)
_INSTALLED = re.compile(
    r"[\\/](?:site-packages|dist-packages|lib[\\/]python\d[\d.]*|python\d+[\\/]lib)[\\/](\w+)(?:\.py)?(?=[\\/\"]|$)",
    re.I,
)


def _frame(match: re.Match[str]) -> str:
    installed = _INSTALLED.search(match.group("path") or "")
    return f" {installed.group(1)} " if installed and not installed.group(1).startswith("_") else " "


def request_of(query: str) -> str:
    """The question without its framing: connectives and greetings opening a sentence, requests to the assistant
    and how the answer is asked for ("What's the best way to…", "I'm not sure which function to use", "any
    ideas?"), what the asker is building ("I'm writing a small script for work.", a name in it kept) and frustration
    that names nothing ("I tried a few things but nothing worked"); a question written in capitals is read in
    lower case (its capitals say nothing: "HOW DO I PARSE JSON" names no constant `PARSE`); the question itself
    when nothing else is left. Everything else is kept as written."""
    words = re.findall(r"[A-Za-z]{2,}", query)
    shouted = sum(word.isupper() for word in words)
    text = query.lower() if shouted >= 3 and shouted >= 0.6 * len(words) else query
    text = _TRACEBACK.sub(_frame, text)
    text = _SITUATION.sub(lambda match: f" {match.group('name') or ''}", text)
    text = _VENTING.sub(" ", text)
    text = _CONNECTIVE.sub(r"\1 ", text.strip())
    text = _INSTRUCTION.sub(" ", text)
    text = _FRAMING.sub(" ", text)
    text = re.sub(r"\s+([?.!,;:])", r"\1", " ".join(text.split()))
    text = re.sub(r"[?.!,;:]+(?=[?.!,;:])", "", text)  # "a url.?" once "What should I use" is gone
    text = re.sub(r"^[\s?.!,;:\-—]+|\s+(?:but|and|or|so)(?=[?.!]?$)|[\s,;:\-—]+$", "", text)  # and what dangles
    return text if re.search(r"\w", text) else query


def topic_of(query: str, library: str | None) -> str:
    """The request without the library's name (and possessive), the question's boilerplate and requests
    to consult the documentation; empty when nothing else is left."""
    text = _POSSESSIVE.sub("", query)
    if library:
        name = clean_library(library)
        text = re.sub(rf"(?<![\w/]){re.escape(name)}(?![\w/])", " ", text, flags=re.I)
    text = _CONNECTIVE.sub(r"\1 ", text.strip())
    text = _INSTRUCTION.sub(" ", text)
    text = _FILLER.sub(" ", text)
    text = _BOILERPLATE.sub(" ", text)
    text = re.sub(r"[`'\"?!:;,()]+", " ", text)
    text = re.sub(r"(?<!\w)[-—–.]+(?!\w)|\.(?=\s|$)", " ", text)  # lone dashes and dots, full stops
    return " ".join(text.split())


def clean_library(name: str) -> str:
    """A library name without a possessive, a trailing "docs"/"library"/… or a pip version requirement:
    "SQLAlchemy's docs" → "SQLAlchemy", "fastapi==0.110" → "fastapi" (a Context7 ID's `@version` stays)."""
    name = _POSSESSIVE.sub("", name.strip().strip("`'\""))
    name = re.sub(r"^the\s+", "", name, flags=re.I)
    name = re.sub(r"\s+(?:docs|documentation|library|package|module|framework|sdk)$", "", name, flags=re.I)
    name = _REQUIREMENT.sub("", name) if not name.startswith("/") else name
    return _POSSESSIVE.sub("", name).strip()


def rule_library(query: str, known: Iterable[str] = ()) -> str | None:
    """The library a request names, by rules (see module docstring); the first of `rule_libraries`."""
    return next(iter(rule_libraries(query, known)), None)


# Idioms in which a library's ordinary word names no library: "limit how many run at the same time" asks about
# concurrency, not the `time` module; a "stack trace" is no `trace`, a "time zone" no `time`, a stream "chunk by
# chunk" no `chunk`.
_IDIOMS = re.compile(
    r"\b(?:(?:at|by) the same time|at a time|from time to time|(?:all|every|each|any|some|next|last|this|that|first|"
    r"second) time|in (?:no )?time|on time|ahead of time|time ?zones?|stack ?traces?|"
    r"(?:chunk|token) by (?:chunk|token)|in chunks)\b",
    re.I,
)


# Models named for the SDK that calls them: "stream Claude's reply" asks about `anthropic`, "ask GPT-4o" about `openai`
# (neither package's name nor description says so)
_PRODUCTS = {"claude": "anthropic", "chatgpt": "openai", "gpt": "openai"}
_PRODUCT = re.compile(r"\b(claude|chatgpt|gpt)(?:-?\d[\w.]*)?(?:-[\w.]*\w)*(?:'s)?(?![\w-])", re.I)


# A library the question asks to do without: "read command line arguments without argparse", "instead of requests"
_EXCLUDING = re.compile(
    r"\b(?:without|instead of|rather than|other than|avoiding|not using)\s+(?:using\s+)?(?:the\s+|an?\s+)?" + _NAME,
    re.I,
)


def excluded_libraries(query: str, known: Iterable[str]) -> tuple[str, ...]:
    """The known libraries a request asks to do without ("without argparse", "instead of the requests library"):
    no library it is about, and their passages are not what it asks for."""
    names = {normalise_name(name) for name in known if name}
    found = (match.group(1) for match in _EXCLUDING.finditer(query))
    return tuple(dict.fromkeys(name for name in found if normalise_name(name) in names))


def without_excluded(query: str, excluded: Iterable[str]) -> str:
    """The request without the phrases that name a library to do without ("… without argparse" → "…")."""
    wanted = {normalise_name(name) for name in excluded}
    if not wanted:
        return query
    kept = _EXCLUDING.sub(lambda m: " " if normalise_name(m.group(1)) in wanted else m.group(0), query)
    return " ".join(kept.split()) or query


def rule_libraries(query: str, known: Iterable[str] = ()) -> list[str]:
    """Every library a request names by rules, the longest name first: an explicit Context7 ID alone, else the
    known names among its words — two adjacent words making one name count as that name and not as their
    parts ("json schema" is `jsonschema`, "pydantic settings" is `pydantic-settings`, not `pydantic`), as do two
    words apart or reversed that spell a distribution's name (`apart_names`: "a JSON document against a schema",
    "lock a file"), a model by the SDK that calls it ("Claude" is `anthropic`, `_PRODUCTS`), and a word in an
    idiom ("at the same time", `_IDIOMS`) or one to do without ("without argparse", `_EXCLUDING`) not at all —,
    else the first name in a telling position."""
    explicit = LIBRARY_ID.search(query)
    if explicit:
        return [explicit.group(0)]
    query = _EXCLUDING.sub(" ", _IDIOMS.sub(" ", query))
    query = _PRODUCT.sub(lambda found: _PRODUCTS[found.group(1).lower()], query)
    names: dict[str, str] = {}
    for name in known:
        if name:
            names.setdefault(normalise_name(name), name)
            names.setdefault(normalise_name(name).replace("-", ""), name)
    words = re.findall(r"[A-Za-z][\w.\-]*[A-Za-z0-9]|[A-Za-z]", query)
    matches: list[str] = []
    at = 0
    while at < len(words):
        subject = _subject(query, words, at)
        if subject is not None and normalise_name(subject[0]) in names:
            matches.append(names[normalise_name(subject[0])])
            at += subject[1]
            continue
        pair = normalise_name(" ".join(words[at : at + 2])) if at + 1 < len(words) else ""
        if pair.count("-") == 1 and not {w.lower() for w in words[at : at + 2]} & _COMMON:
            joined = names.get(pair) or names.get(pair.replace("-", ""))
            if joined:
                matches.append(joined)
                at += 2
                continue
        if normalise_name(words[at]) in names and words[at].lower() not in _COMMON:
            matches.append(words[at])
        at += 1
    for name, parts in apart_names(words, names):  # the name of the two words run together, not its parts
        matches = [name, *(match for match in matches if match.lower() not in parts)]
    if matches:
        return sorted(dict.fromkeys(matches), key=len, reverse=True)
    for pattern in _PATTERNS:
        for match in pattern.finditer(query):
            name = match.group(1)
            if name.lower() not in _COMMON and not _BOILERPLATE.fullmatch(name):
                return [name]
    return []


APART = 4  # how far apart two words may be to spell a library's name together (`apart_names`)


def apart_names(words: Sequence[str], names: Mapping[str, str]) -> list[tuple[str, frozenset[str]]]:
    """The distributions among `names` (normalised name → name) that two of the question's words spell run
    together though apart or reversed, each with those two words, lower-case: "a JSON document against a
    schema" names `jsonschema`, "lock a file" `filelock`. Not a standard-library module: those so spelt are an
    everyday verb and its object ("read a line" is no `readline`, "get the text" no `gettext`)."""
    lowered = [word.lower() for word in words]
    found: dict[str, frozenset[str]] = {}
    for i, first in enumerate(lowered):
        for j in range(max(0, i - APART), min(len(lowered), i + APART + 1)):
            second = lowered[j]
            if j in (i, i + 1) or first == second or len(first) < 3 or len(second) < 3:
                continue  # the adjacent pair in order is read where the words are (`rule_libraries`)
            name = names.get(first + second)
            if name and first + second not in lowered and first + second not in sys.stdlib_module_names:
                found.setdefault(name, frozenset({first, second}))
    return list(found.items())


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

    def excluded(self, query: str) -> tuple[str, ...]:
        """The known libraries the request asks to do without (`excluded_libraries`)."""
        return excluded_libraries(query, self._known())

    async def parse(self, query: str) -> ParsedQuery:
        known = list(self._known())
        named = rule_libraries(query, known)
        excluded = excluded_libraries(query, known)
        query = without_excluded(query, excluded)
        if not named:
            return ParsedQuery(None, topic_of(query, None), excluded=excluded)
        first, *others = named
        return ParsedQuery(
            clean_library(first), topic_of(query, first), others=tuple(map(clean_library, others)), excluded=excluded
        )


_PROMPT = (
    "You extract search parameters from a developer's documentation request. Reply with only a JSON "
    'object: {"library": "<the library, framework or tool the request is about, or null>", '
    '"topic": "<what to look up in its documentation, in a few words>", '
    '"apis": ["<up to 3 fully qualified names of the functions or classes most likely to answer it, such as '
    'shutil.rmtree or httpx.AsyncClient; none if unsure>"]}. The library is its bare name '
    '("sqlalchemy", not "sqlalchemy\'s" or "the sqlalchemy docs"). The topic names only the subject: leave '
    'out the library\'s name, possessives, and requests to consult documentation such as "check the docs", '
    '"look it up" or "in the documentation".'
)


class ModelQueryParser:
    """Parsing by the chat model, falling back to rules when its answer is unusable."""

    def __init__(self, model: Model, rules: RuleQueryParser | None = None) -> None:
        self.model = model
        self._rules = rules or RuleQueryParser()

    async def parse(self, query: str) -> ParsedQuery:
        try:
            response = await complete(
                self.model, ModelRequest(_PROMPT, (Message.user(query[:4000]),), max_tokens=200, purpose="utility")
            )
            parsed = parse_json_object(response.text)
        except ModelError:
            log.warning("query parsing by the model failed; using rules")
            parsed = None
        if not parsed:
            return await self._rules.parse(query)
        named = parsed.get("library")
        library = clean_library(named) if isinstance(named, str) else ""
        excluded = self._rules.excluded(query)  # "without argparse": never the library asked about
        if library.lower() in ("", "null", "none") or normalise_name(library) in map(normalise_name, excluded):
            library = ""
        query = without_excluded(query, excluded)
        topic = topic_of(str(parsed.get("topic") or ""), library or None) or topic_of(query, library or None)
        return ParsedQuery(library or None, topic, _api_names(parsed.get("apis")), excluded=excluded)


def _api_names(value: object) -> tuple[str, ...]:
    """The well-formed dotted names among a model's `apis` (at most MAX_APIS; anything else is ignored)."""
    if not isinstance(value, list):
        return ()
    names = [item.strip().strip("`").removesuffix("()") for item in value if isinstance(item, str)]
    return tuple(dict.fromkeys(name for name in names if _API_NAME.fullmatch(name)))[:MAX_APIS]


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
