"""The built-in offline model: deterministic, needs no key or network, and says it is offline.

It picks tools with simple intent rules (`offline_intents`) and, once tools have answered, replies
extractively: it quotes what the tools returned and cites the item IDs. Without a matching rule it
says plainly what it can and cannot do. Rules are pluggable: later tools add their own. It has no
tokenizer: its usage is counted with the estimate every provider falls back on (`llm/usage.py`),
and marked estimated.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass

from almanac.llm.events import ModelEvent, StreamEnd, TextDelta, ToolCallReady
from almanac.llm.messages import Message, ModelRequest, TextBlock, ToolResultBlock, ToolUseBlock
from almanac.llm.providers.offline_docs import compact_answer
from almanac.llm.providers.offline_intents import (
    KnownItem,
    PlannedCall,
    current_query_number,
    full_context_calls,
    known_items,
    wants_full_context,
)
from almanac.llm.usage import ensure_usage
from almanac.memory.summarise import extractive_summary
from almanac.text.marking import unwrap_data

MAX_QUOTE_CHARS = 20_000
_QUOTING = "(Offline model: I quote what the tools returned rather than reason about it.)"


@dataclass(frozen=True)
class Situation:
    """What the offline model knows about the request it is answering."""

    query: str
    query_number: int
    items: Sequence[KnownItem]
    tool_names: frozenset[str]


IntentRule = Callable[[Situation], list[PlannedCall]]


def full_context_rule(situation: Situation) -> list[PlannedCall]:
    """ "Show me the full … from earlier" → `retrieve_full_context` with the matching ID."""
    if "retrieve_full_context" not in situation.tool_names or not wants_full_context(situation.query):
        return []
    return full_context_calls(situation.query, situation.items, situation.query_number)


_DOC_QUESTION = re.compile(
    r"\b(docs|documentation|how (do|can|should|would) (i|you|we)|how to|(an |some )?examples? (of|for)|"
    r"usage of|api reference|what does \S+ do|configur(e|ation)|(parameters?|arguments?|signature) (of|for)|"
    r"install(ing|ation)?)\b",
    re.I,
)


def documentation_rule(situation: Situation) -> list[PlannedCall]:
    """A documentation question → `retrieve_documentation` with the question."""
    if "retrieve_documentation" not in situation.tool_names or not _DOC_QUESTION.search(situation.query):
        return []
    return [PlannedCall("retrieve_documentation", {"query": situation.query})]


# A developer's request phrased loosely, with no "how do I" ("validate a json schema", "python regex finditer
# example", "set default headers on an httpx AsyncClient"): a word of programming, or a name written as code.
_PROGRAMMING = frozenset(
    """python py pip import library package module sdk api apis function functions method methods class classes
    object attribute argument arguments parameter parameters param kwargs variable variables type types typing
    string strings str int integer integers float floats bool boolean bytes list lists dict dicts dictionary
    dictionaries tuple tuples array arrays matrix dataframe json yaml toml csv xml html markdown url urls uri http
    https request requests response responses header headers cookie cookies endpoint endpoints server client
    socket tcp udp websocket regex regexp pattern file files folder folders directory directories path paths
    pathname zip zipfile tar archive subprocess process processes thread threads threading async await asyncio
    coroutine coroutines task tasks queue semaphore mutex lock exception exceptions traceback stacktrace error
    errors logging logger log logs test tests pytest unittest mock fixture fixtures datetime timestamp timezone
    epoch utc date dates weekday weekdays timedelta uuid hash md5 sha256 sha1 encode decode encoding decoding
    base64 unicode utf-8 ascii iterator
    iterable iterables generator generators decorator decorators lambda dataclass dataclasses enum sql sqlite
    database databases orm schema migration migrations validator validation validate serialize deserialize
    serialization parse parser parsing cli argparse terminal shell stdin stdout stderr env config configuration
    settings token tokens middleware dependency dependencies template templates numpy pandas sort sorted script
    command commands compile compiler runtime install installation tensor vector vectors embedding embeddings
    npm node javascript typescript docker git github repository repo cache timeout retry retries backoff
    callback callbacks webhook oauth jwt auth authentication ssl tls certificate filename filenames wildcard
    subcommand subcommands snippet heap enumeration substring substrings whitespace hex hexadecimal binary
    pythonic os cpu ram program programs code loop loops newline newlines byte bit bits checksum deviation variance
    median""".split()
)
# What a developer asks a program to do, as the first word of a request ("sleep without blocking the event
# loop", "wrap a long paragraph to 70 columns", "Checking if a website is up"): a task for code to look up
_TASKS = frozenset(
    """get set print show sleep wrap represent calculate compute convert trim strip replace generate measure count
    compress decompress iterate round exit increment decrement publish resize declare sort order join split
    open close define exclude group run build stop expose embed insert prompt check parse match find extract
    remove delete reverse read write create make add append load save send download upload fetch format encode
    decode hash encrypt decrypt validate serialize deserialize copy move rename list filter flatten shuffle
    truncate escape unescape capture schedule cancel kill wait retry limit mock patch import call connect listen
    serve handle catch raise ignore suppress detect determine display plot compare combine merge zip unzip
    transpose normalize tokenize paginate stream lock spawn terminate flush cache memoize profile time
    benchmark debug inspect traverse walk watch register authenticate verify dump store persist migrate
    initialize configure bind pick choose select update upgrade commit roll query install test log emit
    subscribe clone pad chunk batch slice sum multiply divide subtract average concatenate duplicate
    deduplicate dedupe search scan crawl scrape submit post pass return yield access assign initialise""".split()
)
_PEOPLE = frozenset({"me", "us", "him", "her", "them", "you"})
_WRITING = frozenset({"poem", "poems", "story", "stories", "essay", "song", "joke", "jokes", "haiku", "speech"})
_THINGS = frozenset({"it", "this", "that", "these", "those", "something", "anything", "everything"})
_FILLER = frozenset({"a", "an", "the", "now", "please", "again", "here", "there", "up", "out", "off", "on", "in"})
_LEAD_IN = re.compile(
    r"^\s*(?:(?:please|pls|ok|okay|so|now|also|and|then)\b[\s,]*)*(?:(?:i|we)\s+(?:want|need|have|would like|'d like)"
    r"\s+to\s+|(?:can|could|would)\s+you\s+|is\s+there\s+a\s+way\s+to\s+)?",
    re.I,
)


def task_verb(word: str) -> str | None:
    """The task a request's first word asks for (`_TASKS`), in any of its forms: "check", "checks",
    "checking" all ask to check; None for any other word."""
    word = word.lower()
    stems = [word]
    if word.endswith("ing") and len(word) > 5:
        base = word[:-3]
        stems += [base, base + "e", *([base[:-1]] if len(base) > 2 and base[-1] == base[-2] else [])]
    elif word.endswith("es"):
        stems += [word[:-2], word[:-1]]
    elif word.endswith("s"):
        stems.append(word[:-1])
    return next((stem for stem in stems if stem in _TASKS), None)


def task_request(query: str) -> bool:
    """Whether a request asks for a task that code does, however plainly put: it opens with such a task
    (`task_verb`, after "please", "I want to", "can you"…) done to something named — not to a person ("make me
    a sandwich", "find a restaurant near me"), not a piece of writing ("write a poem") and not a thing left unnamed
    ("stop it", "render this")."""
    text = prose(query)
    lead_in = _LEAD_IN.match(text)
    words = re.findall(r"[A-Za-z][\w'-]*", text[lead_in.end() if lead_in else 0 :])
    if len(words) < 2 or len(words) > 40 or task_verb(words[0]) is None:
        return False
    rest = {word.lower() for word in words[1:]}
    return not rest & (_PEOPLE | _WRITING) and bool(rest - _THINGS - _FILLER)


_CODE_NAME = re.compile(r"`[^`]+`|\b[A-Za-z]\w*_\w*[A-Za-z0-9]\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z]+[A-Z]\w*\b|\b\w+\(\)")


def prose(query: str) -> str:
    """A request without its markup: HTML tags, links' targets and URLs say nothing about its subject
    (`javascript:` in a link is no question about JavaScript)."""
    return re.sub(
        r"<[^>]*>|\]\([^)]*\)|\b(?:[a-z][a-z0-9+.\-]*://|(?:javascript|vbscript|data|mailto):)\S+",
        " ",
        query,
        flags=re.I,
    )


def request_words(query: str) -> set[str]:
    """The lower-case words of a request's prose (`prose`), for rules that look for telling words."""
    return {word.lower() for word in re.findall(r"[A-Za-z][\w\-]*[A-Za-z0-9]|[A-Za-z]", prose(query))}


# Library names that are everyday words too ("what time is it", "click the button"): alone, not about code.
_EVERYDAY = frozenset(
    """abc array chunk click code copy email google io keyword locale mailbox math numbers profile queue random
    rich select signal site stat string struct time token trace types wave cmd dis gc imp grp pwd uu this
    turtle calendar almanac""".split()
)
_AS_LIBRARY = re.compile(
    r"\b(?:with|using|via)\s+(?:the\s+)?([a-z][\w-]*)\b|\b([a-z][\w-]*)\s+(?:module|library|package|lib)\b"
    r"|(?<![\w.])([a-z_]\w*)\.(?!(?:txt|md|csv|json|ya?ml|toml|ini|cfg|log|html?|xml|pdf|png|jpe?g|gif|zip|gz|tar|py|js|"
    r"ts|sh|com|org|net|io|dev|example)\b)[a-z_]\w*\b(?!\.\w)",
    re.I,
)


def written_as_library(query: str) -> set[str]:
    """The words a request writes as a library's name, whatever else they mean (`written_as_library("show a
    progress bar with rich")` is {"rich"}; "the time module", `time.sleep`: {"time"}); a web address or a file
    name (`evil.example`, `notes.txt`) is no library's."""
    return {next(group for group in match.groups() if group).lower() for match in _AS_LIBRARY.finditer(prose(query))}


def names_library(query: str, libraries: Iterable[str]) -> bool:
    """Whether a request names one of `libraries` (the documentation's): by a name of its own anywhere, or by a
    name that is an everyday word as well where the request writes it as a library — after "with", "using" or
    "via" ("a progress bar with rich"), before "module", "library" or "package" ("the time module"), or as the
    first part of a dotted name (`time.sleep`)."""
    known = {name.lower() for name in libraries}
    return bool(request_words(query) & (known - _EVERYDAY) or written_as_library(query) & known)


def developer_request_rule(situation: Situation) -> list[PlannedCall]:
    """A request that says no "how do I" but is about code (tried after every other rule) →
    `retrieve_documentation` with it: it names a thing of programming, writes a name as code, or asks for a
    task code does (`task_request`)."""
    if "retrieve_documentation" not in situation.tool_names:
        return []
    words = request_words(situation.query)
    words |= {part for word in words for part in word.split("-")}  # "non-ASCII" names ASCII
    if {"regular", "expression"} <= words or {"regular", "expressions"} <= words:
        words.add("regex")
    if not (words & _PROGRAMMING or _CODE_NAME.search(prose(situation.query)) or task_request(situation.query)):
        return []
    return [PlannedCall("retrieve_documentation", {"query": situation.query})]


class OfflineModel:
    """A rule-based stand-in for a language model."""

    provider = "offline"
    name = "almanac-offline"
    supports_tools = True
    supports_streaming = True

    def __init__(
        self,
        *,
        token_delay_s: float = 0.0,
        rules: Sequence[IntentRule] = (full_context_rule, documentation_rule),
        last: Sequence[IntentRule] = (developer_request_rule,),
    ) -> None:
        self._delay = token_delay_s
        self.rules: list[IntentRule] = list(rules)
        self.last: list[IntentRule] = list(last)  # tried after every rule, those added later included

    def add_rule(self, rule: IntentRule, *, first: bool = False, last: bool = False) -> None:
        """Teach the model another intent (earlier rules win; `first` puts it before all others, `last` among
        the rules tried after all others: a loose reading of a request, such as `developer_request_rule`)."""
        if first:
            self.rules.insert(0, rule)
        elif last:
            self.last.append(rule)
        else:
            self.rules.append(rule)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The answer's events, ending with its estimated usage."""
        return ensure_usage(self._answer(request), request)

    async def _answer(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.purpose == "summary":
            text = extractive_summary(_item_text(request.messages[-1].text))
            async for event in self._say(text, request):
                yield event
            return
        query_index = _current_query_index(request.messages)
        query = _strip_prefix(request.messages[query_index].text)
        results = _tool_results(request.messages[query_index + 1 :])
        if results or request.tool_choice == "none" or not request.tools:
            if results:  # quoting only errors is no answer either
                answer, declined = _answer_from_results(results), all(result.is_error for _, result in results)
            else:
                answer, declined = _direct_answer(query, request)
            async for event in self._say(answer, request, declined=declined):
                yield event
            return
        situation = Situation(
            query=query,
            query_number=current_query_number(request.messages[query_index].text),
            items=known_items([m.text for m in request.messages[:query_index]]),
            tool_names=frozenset(spec.name for spec in request.tools),
        )
        # a request for a long answer gets it (`_direct_answer`) rather than a loose reading (`last`)
        rules = self.rules if _LONG.search(query) else [*self.rules, *self.last]
        planned = next((calls for rule in rules if (calls := rule(situation))), [])
        if not planned:
            answer, declined = _direct_answer(query, request)
            async for event in self._say(answer, request, declined=declined):
                yield event
            return
        turn = sum(1 for m in request.messages if m.role == "assistant")
        for index, call in enumerate(planned, start=1):
            block = ToolUseBlock(
                id=f"toolu_offline_{situation.query_number}_{turn}_{index}", name=call.name, input=dict(call.arguments)
            )
            yield ToolCallReady(block)
        yield StreamEnd("tool_use")

    async def _say(self, text: str, request: ModelRequest, *, declined: bool = False) -> AsyncIterator[ModelEvent]:
        words = text.split(" ")
        for index, word in enumerate(words):
            yield TextDelta(word if index == len(words) - 1 else word + " ")
            if self._delay:
                await asyncio.sleep(self._delay)
            elif index % 64 == 63:
                await asyncio.sleep(0)
        yield StreamEnd("end_turn", declined=declined)


def _current_query_index(messages: Sequence[Message]) -> int:
    """Index of the current query: the last user message that has text (not only tool results)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and any(
            isinstance(b, TextBlock) and b.text.startswith("[ID:q") for b in message.content
        ):
            return index
    return len(messages) - 1


def _strip_prefix(text: str) -> str:
    return text.split("] ", 1)[1] if text.startswith("[ID:") and "] " in text else text


def _tool_results(messages: Sequence[Message]) -> list[tuple[ToolUseBlock | None, ToolResultBlock]]:
    calls = {b.id: b for m in messages for b in m.content if isinstance(b, ToolUseBlock)}
    return [
        (calls.get(block.tool_use_id), block)
        for message in messages
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]


def _answer_from_results(results: Sequence[tuple[ToolUseBlock | None, ToolResultBlock]]) -> str:
    parts: list[str] = []
    for call, result in results:
        item_id, _, body = result.content.partition("] ")
        body = unwrap_data(body)  # the answer quotes the result to a person: no data marker
        cite = item_id.removeprefix("[ID:") if item_id.startswith("[ID:") else "tool result"
        name = call.name if call else "a tool"
        if not result.is_error and name == "retrieve_documentation" and (compact := compact_answer(body, cite)):
            parts.append(compact)  # the best passage first, compactly; the others as links
            continue
        if not parts or parts[0] != _QUOTING:
            parts.insert(0, _QUOTING)
        if result.is_error:
            parts.append(f"**{name}** reported a problem [{cite}]: {body.strip()}")
            continue
        _, _, rest = body.partition("\n")
        if call is not None and call.name == "retrieve_full_context" and rest:
            source = call.input.get("id", "")
            parts.append(f"Here is the full text of {source} [{cite}]:\n\n{_quote(rest)}")
        else:
            arguments = json.dumps(dict(call.input), ensure_ascii=False) if call else ""
            parts.append(f"From **{name}** {arguments} [{cite}]:\n\n{_quote(body)}")
    return "\n\n".join(parts)


def _quote(text: str) -> str:
    text = text.strip()
    if len(text) > MAX_QUOTE_CHARS:
        text = text[:MAX_QUOTE_CHARS] + "\n… [cut here; the full text is in the cited item]"
    return text


# A long answer asked for ("a long tour", "a detailed explanation", "in depth") — not a long thing to work on ("wrap a
# long paragraph", "how long a snippet takes")
_LONG = re.compile(
    r"\b(?:(?:long|detailed|lengthy|thorough)\s+(?:\w+\s+)?(?:answers?|explanation|response|reply|description|"
    r"overview|tour|write-?up|guide)|in detail|in depth|essay|tour)\b",
    re.I,
)
_TOUR = [
    (
        "Conversation memory",
        "Every query, tool result and answer is stored twice: verbatim in the full track and "
        "summarised in the summarised track. Items carry IDs such as `q3`, `q3-t1` and `q3-r`; summaries are "
        "`q3-t1-sum` and `q3-r-sum` and point back with a `ref`. Later queries see the summaries, and the model can "
        "fetch any original with `retrieve_full_context`.",
    ),
    (
        "The turn loop",
        "A query may take up to fifteen model turns. All tool calls of one turn run at the same time, "
        "each under its own timeout, and a failing tool becomes an error result the model can read instead of a "
        "crash. When the turns run out, the model is asked once more, without tools, for its best answer.",
    ),
    (
        "Credits",
        "A query costs five credits, documentation lookups ten more (once per query), GitHub tools three "
        "each and other tools two each. The free plan renews fifty credits every UTC day; credit packs never expire.",
    ),
]


def _long_answer(query: str) -> str:
    """A long, deterministic Markdown answer (for trying streaming and the stop button offline)."""
    parts = ["(Offline model: a long guided tour of how Almanac works, since I cannot answer freely.)", ""]
    for round_number in range(1, 5):
        for title, text in _TOUR:
            parts += [f"## {title} ({round_number})", "", text, ""]
        parts += ["```python", f"# round {round_number}", "ids = [f'q{n}-r' for n in range(1, 4)]", "```", ""]
    parts += [
        "| item | meaning |",
        "|---|---|",
        "| `q1` | a query |",
        "| `q1-t1` | its first tool result |",
        "| `q1-r` | its answer |",
    ]
    return "\n".join(parts)


def _direct_answer(query: str, request: ModelRequest) -> tuple[str, bool]:
    """The answer to a query no tool served, and whether it declines (says it cannot answer)."""
    if _LONG.search(query):
        return _long_answer(query), False
    tools = sorted(spec.name for spec in request.tools)
    abilities = []
    if "retrieve_full_context" in tools:
        abilities.append("fetch the full text of an earlier item, e.g. “show me the full answer from q1”")
    if "retrieve_documentation" in tools:
        abilities.append("look things up in documentation, e.g. “how do I use asyncio.TaskGroup?”")
    if "code_execution" in tools:
        abilities.append("run code in a sandbox, e.g. “run this Python: print(2**10)”")
    if "list_files" in tools:
        abilities.append("use your workspace, e.g. “list my workspace files”, “read notes.txt”")
    # a person's question is quoted back; an application's prompt (a planner's, `purpose="utility"`) is not: echoed,
    # its own format markers ("SUMMARY:") would read as an answer in that format
    quoted = "\n".join("> " + line for line in query.strip().splitlines()[:40]) or "> (empty)"
    lines = [
        "I'm Almanac's built-in **offline model**: no language model is configured here, so I cannot "
        "compose a free-form answer" + (" to this request." if request.purpose == "utility" else " to:"),
        *(("", quoted) if request.purpose != "utility" else ()),
        "",
        "Set `ANTHROPIC_API_KEY` (or `OPENAI_BASE_URL` for any OpenAI-compatible server) for real answers.",
    ]
    if abilities:
        lines += ["", "What I can do offline: " + "; ".join(abilities) + "."]
    return "\n".join(lines), True


def _item_text(prompt: str) -> str:
    start, end = prompt.find("<item>"), prompt.rfind("</item>")
    return prompt[start + 6 : end].strip() if start >= 0 and end > start else prompt
