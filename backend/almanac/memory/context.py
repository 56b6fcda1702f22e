"""Assembling what a model sees for one call, within its context window (pure).

A request is the system prompt, the tool definitions, the conversation so far and the current
query with the tool calls it made. `assemble()` fits them in `Window.prompt_tokens` (the model's
window minus the answer's `max_tokens` and a margin), giving way in this order:

1. Each tool result of the current query is cut to `tool_result_tokens`, each earlier item (a
   stored query, a summary) to `history_item_tokens`: a head, then
   `[truncated: retrieve_full_context("q7-t2") for the rest]`.
2. Earlier queries leave the working set, oldest first, a whole query at a time; the model gets
   one line naming what was left out (all of it stays retrievable by ID).
3. If the current query's own tool results still do not fit, the oldest are cut further, down to
   a pointer to their ID.

The system prompt, the tools and the current message are never cut: if they alone do not fit,
`ContextOverflow` says by how much, and nothing is sent.

Everything that did not come from the user — tool calls replayed from memory (the name and the
arguments a model chose), tool results, summaries, earlier answers — is wrapped as data
(`text/marking.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby

from almanac.llm.messages import Message, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock
from almanac.llm.tokens import TokenCounter
from almanac.memory.history import SUMMARISED_KINDS, id_prefix, replayed_tool_call
from almanac.memory.ids import ItemKind, full_id_of, query_id
from almanac.storage.records import ItemRecord
from almanac.text.marking import as_data

POINTER_TOKENS = 40  # what a result cut down to its pointer still takes
NOTE_TOKENS = 80  # reserved for the line naming what was left out


class ContextOverflow(Exception):
    """The system prompt, tools and current message alone exceed the window."""

    def __init__(self, *, needed: int, available: int) -> None:
        super().__init__(
            f"this message needs about {needed:,} tokens of the model's context but only {available:,} are "
            "available (after the system prompt, tools and room for the answer); shorten it"
        )
        self.needed = needed
        self.available = available


@dataclass(frozen=True)
class Window:
    """How many tokens one request may use, and the caps on single items."""

    prompt_tokens: int
    tool_result_tokens: int = 6_000
    history_item_tokens: int = 1_500

    @classmethod
    def for_model(cls, *, context_tokens: int, max_output_tokens: int, tool_result_tokens: int) -> Window:
        """The window of a model with `context_tokens`, leaving room for the answer and a margin
        (5 %, at least 256 tokens); the item caps never exceed a share of it."""
        margin = max(256, context_tokens // 20)
        prompt = max(512, context_tokens - max_output_tokens - margin)
        return cls(
            prompt_tokens=prompt,
            tool_result_tokens=max(200, min(tool_result_tokens, prompt * 2 // 5)),
            history_item_tokens=max(100, min(1_500, prompt // 10)),
        )

    def halved(self) -> Window:
        """A window half this size (after a provider said the request was too long anyway)."""
        return Window(
            prompt_tokens=self.prompt_tokens // 2,
            tool_result_tokens=max(100, self.tool_result_tokens // 2),
            history_item_tokens=max(50, self.history_item_tokens // 2),
        )


@dataclass(frozen=True)
class Exchange:
    """One tool call of the current query and its (full, raw) result."""

    call: ToolUseBlock
    item_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Turn:
    """One model turn of the current query: its text, its tool calls and their results, and a
    note the model gets with the results (e.g. the credits left)."""

    text: str
    exchanges: tuple[Exchange, ...]
    note: str | None = None


@dataclass(frozen=True)
class QueryPrompt:
    """What the model is asked: the conversation's earlier items, the current query, the window."""

    history: Sequence[ItemRecord]
    query_number: int
    query_text: str
    window: Window
    counter: TokenCounter = field(default_factory=TokenCounter)

    @classmethod
    def single(cls, text: str, *, prompt_tokens: int = 1_000_000) -> QueryPrompt:
        """A first query with no history (tests, one-off calls)."""
        return cls((), 1, text, Window(prompt_tokens))


@dataclass(frozen=True)
class Assembly:
    messages: tuple[Message, ...]
    tokens: int  # the estimate for the whole request (system and tools included)
    left_out: tuple[int, ...] = ()  # earlier query numbers not shown
    cut: tuple[str, ...] = ()  # item IDs shown truncated


def assemble(
    prompt: QueryPrompt,
    *,
    system: str,
    tools: Sequence[ToolSpec],
    turns: Sequence[Turn] = (),
    final_note: str | None = None,
) -> Assembly:
    """The messages of one request within `prompt.window` (see the module docstring)."""
    counter, window = prompt.counter, prompt.window
    question = Message.user(f"[ID:{query_id(prompt.query_number)}] {prompt.query_text}")
    fixed = counter.count(system) + counter.count_tools(tools) + counter.count_message(question)
    if final_note:
        fixed += counter.count(final_note)
    if fixed > window.prompt_tokens:
        raise ContextOverflow(needed=fixed, available=window.prompt_tokens)
    cut: list[str] = []
    current = _fit_turns(turns, prompt, room=window.prompt_tokens - fixed, cut=cut, final_note=final_note)
    used = fixed + counter.count_messages(current) - (counter.count(final_note) if final_note else 0)
    room = window.prompt_tokens - used - NOTE_TOKENS
    for _ in range(32):  # converges in one or two rounds; bounded all the same
        history_cut: list[str] = []
        earlier, left_out = _fit_history(prompt, room=room, cut=history_cut)
        messages = [*earlier, question, *current]
        total = counter.count(system) + counter.count_tools(tools) + counter.count_messages(messages)
        if left_out:
            # The note, as long as room allows: in full, short, or (no room at all) left out.
            for note in (_left_out_note(left_out), _left_out_note(left_out, short=True)):
                noted = [Message("user", (TextBlock(note + "\n\n" + messages[0].text),)), *messages[1:]]
                size = counter.count(system) + counter.count_tools(tools) + counter.count_messages(noted)
                if size <= window.prompt_tokens or earlier:
                    messages, total = noted, size
                    break
        if total <= window.prompt_tokens or not earlier:
            break
        room -= total - window.prompt_tokens  # the note came out longer than reserved: give way a little more
    return Assembly(tuple(messages), total, tuple(left_out), tuple(cut + history_cut))


def preflight(prompt: QueryPrompt, *, system: str, tools: Sequence[ToolSpec]) -> None:
    """Raise `ContextOverflow` if the current message cannot be sent at all."""
    assemble(prompt, system=system, tools=tools)


# --- the current query ------------------------------------------------------------------------


def _fit_turns(
    turns: Sequence[Turn], prompt: QueryPrompt, *, room: int, cut: list[str], final_note: str | None
) -> list[Message]:
    """The current query's turns within `room` tokens: results capped, then the oldest cut further
    (down to a pointer to their ID)."""
    counter = prompt.counter
    sizes = [[counter.count(exchange.content) for exchange in turn.exchanges] for turn in turns]
    caps = [[min(size, prompt.window.tool_result_tokens) for size in row] for row in sizes]
    messages = _render_turns(turns, caps, counter, final_note)
    excess = counter.count_messages(messages) - room
    while excess > 0:
        place = next(((t, i) for t, row in enumerate(caps) for i, cap in enumerate(row) if cap > 0), None)
        if place is None:
            break  # every result is a pointer already; the caller's total check decides
        t, i = place
        caps[t][i] = max(0, caps[t][i] - excess - 40) if caps[t][i] > excess + 80 else 0
        messages = _render_turns(turns, caps, counter, final_note)
        excess = counter.count_messages(messages) - room
    cut.extend(
        exchange.item_id
        for t, turn in enumerate(turns)
        for i, exchange in enumerate(turn.exchanges)
        if caps[t][i] < sizes[t][i]
    )
    return messages


def _render_turns(
    turns: Sequence[Turn], caps: list[list[int]], counter: TokenCounter, final_note: str | None
) -> list[Message]:
    messages: list[Message] = []
    for turn_number, turn in enumerate(turns):
        said = [TextBlock(turn.text)] if turn.text else []
        messages.append(Message("assistant", (*said, *(exchange.call for exchange in turn.exchanges))))
        results: list[TextBlock | ToolResultBlock] = [
            ToolResultBlock(
                exchange.call.id,
                _result_text(exchange, caps[turn_number][index], counter),
                exchange.is_error,
            )
            for index, exchange in enumerate(turn.exchanges)
        ]
        last = turn_number == len(turns) - 1
        notes = [note for note in (turn.note, final_note if last else None) if note]
        results.extend(TextBlock(note) for note in notes)
        messages.append(Message("user", tuple(results)))
    return messages


def _result_text(exchange: Exchange, cap: int, counter: TokenCounter) -> str:
    source = f"{exchange.item_id} {exchange.call.name}"
    if cap <= 0 and exchange.content:
        return (
            f"[ID:{exchange.item_id}] [result not shown to save space: "
            f'retrieve_full_context("{exchange.item_id}") returns it]'
        )
    return f"[ID:{exchange.item_id}] " + as_data(
        _bounded(exchange.content, cap, exchange.item_id, counter), source=source
    )


def _bounded(content: str, cap: int, full_id: str, counter: TokenCounter) -> str:
    """`content` within `cap` tokens: a head and a pointer to the rest."""
    if counter.count(content) <= cap:
        return content
    head = counter.cut(content, max(0, cap - 30)).rstrip()
    return (
        f'{head}\n… [truncated: {len(content):,} characters in full; retrieve_full_context("{full_id}") for the rest]'
    )


# --- earlier queries ----------------------------------------------------------------------------


def _fit_history(prompt: QueryPrompt, *, room: int, cut: list[str]) -> tuple[list[Message], list[int]]:
    """Whole earlier queries, newest first, while they fit in `room`; the numbers left out."""
    counter, cap = prompt.counter, prompt.window.history_item_tokens
    earlier = [
        item for item in prompt.history if item.query_number < prompt.query_number and item.kind in SUMMARISED_KINDS
    ]
    groups = [(number, list(items)) for number, items in groupby(earlier, key=lambda item: item.query_number)]
    kept: list[list[Message]] = []
    left_out: list[int] = []
    for position in range(len(groups) - 1, -1, -1):
        number, items = groups[position]
        pair, shortened = _render_query(number, items, cap, counter)
        size = counter.count_messages(pair)
        if size > room:
            left_out = [n for n, _ in groups[: position + 1]]
            break
        room -= size
        kept.append(pair)
        cut.extend(shortened)
    messages = [message for pair in reversed(kept) for message in pair]
    return messages, left_out


def _render_query(
    number: int, items: list[ItemRecord], cap: int, counter: TokenCounter
) -> tuple[list[Message], list[str]]:
    """An earlier query as a user message (its text) and an assistant message (its tool results'
    and answer's summaries, as data)."""
    shortened: list[str] = []
    asked = next((item for item in items if item.kind == ItemKind.QUERY), None)
    if asked is not None:
        text = _bounded(asked.content, cap, asked.item_id, counter)
        if text != asked.content:
            shortened.append(asked.item_id)
        question = f"{id_prefix(asked)} {text}"
    else:
        question = f"[ID:{query_id(number)}] (query text missing)"
    parts = []
    for item in items:
        if item.kind == ItemKind.QUERY:
            continue
        full_id = item.ref or full_id_of(item.item_id)
        content = _bounded(item.content, cap, full_id, counter)
        if content != item.content:
            shortened.append(item.item_id)
        if item.kind == ItemKind.TOOL_SUMMARY:
            parts.append(f"{id_prefix(item)} {replayed_tool_call(item, content)}")
        else:
            parts.append(f"{id_prefix(item)} My answer:\n" + as_data(content, source=item.item_id))
    answer = "\n\n".join(parts) or f"[no answer was recorded for {query_id(number)}]"
    return [Message.user(question), Message.assistant(answer)], shortened


def _left_out_note(numbers: Sequence[int], *, short: bool = False) -> str:
    first, last = min(numbers), max(numbers)
    span = f"q{first}" if first == last else f"q{first}–q{last}"
    if short:
        return f"[Memory: {span} not shown; retrieve_full_context by ID.]"
    return (
        f"[Memory: earlier queries {span} of this conversation, with their tool results and answers, are not "
        "shown here to fit the context window. Every item is still available: call retrieve_full_context "
        f'with its ID, e.g. "q{last}", "q{last}-t1" or "q{last}-r".]'
    )
