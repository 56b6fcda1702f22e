"""Tool calls written as text by models without native tool calling (pure).

Recognised forms, in the order a reply is searched:
- a fenced block tagged `tool` (or `tool_call`, `tool_code`) holding a JSON call;
- `<tool_call>…</tool_call>` holding a JSON call, or Qwen-coder's `<function=name><parameter=p>v
  </parameter></function>`; an unclosed final tag takes the rest of the reply;
- a fenced `json` (or untagged) block, or a bare JSON object starting a line, that names a known tool.

A JSON call is `{"name": …, "arguments": {…}}`; `parameters`, `input` and `args` stand for
`arguments`, `tool`/`tool_name` for `name`, and OpenAI's `{"function": {"name", "arguments"}}`
(arguments possibly a JSON string) is understood too. Common defects are repaired: trailing commas,
single-quoted strings, Python's True/False/None, unquoted keys, unclosed strings, braces and
brackets. Names are matched to the known tools exactly, then ignoring case, `-` versus `_` and a
`functions.` prefix. A call that still cannot be understood comes back with `error` set, so the
turn loop can tell the model what was wrong instead of silently ignoring it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ParsedCall:
    name: str
    arguments: Mapping[str, Any]
    error: str | None = None


@dataclass(frozen=True)
class ParsedReply:
    """A reply split into its prose (calls removed, text after the last call dropped) and calls."""

    text: str
    calls: tuple[ParsedCall, ...] = field(default_factory=tuple)


_FENCE = re.compile(r"```[ \t]*([A-Za-z_]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_CALL_FENCES = {"tool", "tool_call", "tool_code", "tool_use", "function_call"}
_MAYBE_FENCES = {"json", "json5", ""}
_XML = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)
_QWEN_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|\Z)", re.S)
_QWEN_PARAMETER = re.compile(r"<parameter=([^>\s]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)
_BARE = re.compile(r"(?m)^[ \t]*\{")
_NAME_KEYS = ("name", "tool", "tool_name", "function_name")
_ARGUMENT_KEYS = ("arguments", "parameters", "input", "args", "params")


def parse_reply(text: str, tool_names: Collection[str]) -> ParsedReply:
    """The tool calls in `text` and the prose around them."""
    spans: list[tuple[int, int, ParsedCall]] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    for match in _XML.finditer(text):
        spans.append((match.start(), match.end(), _xml_call(match.group(1), tool_names)))
        taken.append(match.span())
    for match in _FENCE.finditer(text):
        if not free(*match.span()):
            continue
        tag, body = match.group(1).lower(), match.group(2)
        if tag in _CALL_FENCES:
            spans.append((match.start(), match.end(), call_from_json(body, tool_names)))
            taken.append(match.span())
        elif tag in _MAYBE_FENCES:
            call = call_from_json(body, tool_names)
            if call.error is None and call.name in tool_names:
                spans.append((match.start(), match.end(), call))
            taken.append(match.span())  # code shown to the user is never scanned for bare JSON
    for match in _BARE.finditer(text):
        start = match.end() - 1
        if not free(start, start + 1):
            continue
        end = _object_end(text, start)
        raw = text[start:end]
        if not _looks_like_call(raw):
            continue
        call = call_from_json(raw, tool_names)
        if call.error is None and call.name not in tool_names:
            continue
        spans.append((start, end, call))
        taken.append((start, end))
    if not spans:
        return ParsedReply(text)
    spans.sort(key=lambda span: span[0])
    prose, position = [], 0
    for start, end, _ in spans:
        prose.append(text[position:start])
        position = end
    return ParsedReply("".join(prose).strip(), tuple(call for _, _, call in spans))


def call_from_json(raw: str, tool_names: Collection[str]) -> ParsedCall:
    """One call from its JSON text (repaired if needed)."""
    try:
        value = loads_lenient(raw)
    except ValueError as exc:
        guess = re.search(r"""["']?(?:name|tool)["']?\s*:\s*["']([^"']+)["']""", raw)
        guessed = resolve_name(guess.group(1), tool_names) if guess else "unnamed_tool_call"
        return ParsedCall(guessed, {}, f"the tool call is not valid JSON: {exc}")
    if not isinstance(value, dict):
        return ParsedCall("unnamed_tool_call", {}, "a tool call must be a JSON object with a name and arguments")
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name: str | None = next((value[key] for key in _NAME_KEYS if isinstance(value.get(key), str)), None)
    if not name:
        return ParsedCall("unnamed_tool_call", {}, 'the tool call has no "name"')
    arguments: Any = next((value[key] for key in _ARGUMENT_KEYS if key in value), {})
    resolved = resolve_name(name, tool_names)
    if isinstance(arguments, str):
        try:
            arguments = loads_lenient(arguments) if arguments.strip() else {}
        except ValueError as exc:
            return ParsedCall(resolved, {}, f"the arguments are not valid JSON: {exc}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return ParsedCall(resolved, {}, "the arguments must be a JSON object")
    return ParsedCall(resolved, arguments)


def resolve_name(name: str, tool_names: Collection[str]) -> str:
    """The known tool `name` means (exact, then case, `-`/`_`, `functions.` prefix); else `name`."""
    name = name.strip()
    if name in tool_names:
        return name
    wanted = _name_key(name.removeprefix("functions."))
    for known in tool_names:
        if _name_key(known) == wanted:
            return known
    return name


def _name_key(name: str) -> str:
    return re.sub(r"[-\s.]", "_", name.strip().lower())


def _xml_call(body: str, tool_names: Collection[str]) -> ParsedCall:
    function = _QWEN_FUNCTION.search(body)
    if function is None:
        return call_from_json(body, tool_names)
    arguments: dict[str, Any] = {}
    for match in _QWEN_PARAMETER.finditer(function.group(2)):
        value = match.group(2).strip()
        try:
            arguments[match.group(1)] = json.loads(value)
        except ValueError:
            arguments[match.group(1)] = value
    return ParsedCall(resolve_name(function.group(1), tool_names), arguments)


def _looks_like_call(raw: str) -> bool:
    head = raw[:200]
    return any(re.search(rf"""["']?{key}["']?\s*:""", head) for key in (*_NAME_KEYS, "function"))


def _object_end(text: str, start: int) -> int:
    """The end of the JSON object starting at `start` (string-aware), or the end of the text."""
    depth, quote, escaped = 0, "", False
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
    return len(text)


def loads_lenient(raw: str) -> Any:
    """`json.loads`, retried once on a repaired copy; raises ValueError naming the first problem."""
    raw = raw.strip()
    try:
        return json.loads(raw)
    except ValueError as first:
        try:
            return json.loads(repair_json(raw))
        except ValueError:
            raise ValueError(f"{first.args[0] if first.args else first}") from None


_LITERALS = {"True": "true", "False": "false", "None": "null"}


def repair_json(raw: str) -> str:
    """Fix the defects models commonly make in JSON: single-quoted strings, trailing commas,
    Python literals, unquoted keys, and unclosed strings, objects and arrays."""
    out: list[str] = []
    stack: list[str] = []
    index, length = 0, len(raw)
    while index < length:
        char = raw[index]
        if char in "\"'":
            text, index = _read_string(raw, index)
            out.append(json.dumps(text, ensure_ascii=False))
            continue
        if char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]":
            _drop_trailing_comma(out)
            if stack:
                stack.pop()
        elif char.isalpha() or char == "_":
            end = index
            while end < length and (raw[end].isalnum() or raw[end] in "_-"):
                end += 1
            word = raw[index:end]
            rest = raw[end:].lstrip()
            if rest.startswith(":") and stack and stack[-1] == "}":
                out.append(json.dumps(word))
            else:
                out.append(_LITERALS.get(word, word))
            index = end
            continue
        out.append(char)
        index += 1
    _drop_trailing_comma(out)
    out.extend(reversed(stack))
    return "".join(out)


def _read_string(raw: str, start: int) -> tuple[str, int]:
    """The value of the string literal at `start` (either quote) and the index after it; an
    unclosed string runs to the end."""
    quote, chars, index = raw[start], [], start + 1
    escapes = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'"}
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw):
            following = raw[index + 1]
            if following == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", raw[index + 2 : index + 6]):
                chars.append(chr(int(raw[index + 2 : index + 6], 16)))
                index += 6
                continue
            chars.append(escapes.get(following, following))
            index += 2
            continue
        if char == quote:
            return "".join(chars), index + 1
        chars.append(char)
        index += 1
    return "".join(chars), index


def _drop_trailing_comma(out: list[str]) -> None:
    position = len(out) - 1
    while position >= 0 and out[position].isspace():
        position -= 1
    if position >= 0 and out[position] == ",":
        del out[position]


_MARKERS = ("```", "<tool_call>", "<function=", "{")


class CallSpotter:
    """Streams a reply's prose while holding back anything that may be a tool call.

    `feed` returns the text that is safe to show now; from the first possible call onwards text is
    held, and `finish` parses it: the prose not shown yet and the calls."""

    def __init__(self, tool_names: Collection[str]) -> None:
        self._names = tool_names
        self._held = ""
        self._capturing = False
        self._at_line_start = True

    def feed(self, text: str) -> str:
        """Text of the reply that cannot be part of a call (possibly empty)."""
        self._held += text
        if self._capturing:
            return ""
        position = self._first_marker()
        if position is not None:
            shown, self._held = self._held[:position], self._held[position:]
            self._capturing = True
            self._note(shown)
            return shown
        keep = self._partial_marker_tail()
        shown, self._held = self._held[: len(self._held) - keep], self._held[len(self._held) - keep :]
        self._note(shown)
        return shown

    def finish(self) -> ParsedReply:
        """The held-back text, parsed."""
        held, self._held = self._held, ""
        if not self._capturing:
            return ParsedReply(held)
        return parse_reply(held, self._names)

    def _note(self, shown: str) -> None:
        if shown:
            self._at_line_start = shown.endswith("\n")

    def _first_marker(self) -> int | None:
        held = self._held
        best: int | None = None
        for marker in _MARKERS[:-1]:
            found = held.find(marker)
            if found >= 0 and (best is None or found < best):
                best = found
        for match in _BARE.finditer(held):
            if match.start() == 0 and not self._at_line_start:
                continue
            if best is None or match.start() < best:
                best = match.start()
            break
        return best

    def _partial_marker_tail(self) -> int:
        """How many trailing characters must wait: a possible start of a marker, or a line holding
        only blanks so far (it may go on with `{`)."""
        held = self._held
        keep = 0
        for size in range(min(len(held), max(len(m) for m in _MARKERS) - 1), 0, -1):
            if any(marker.startswith(held[-size:]) for marker in _MARKERS[:-1]):
                keep = size
                break
        line_start = held.rfind("\n") + 1
        if (line_start > 0 or self._at_line_start) and not held[line_start:].strip(" \t"):
            keep = max(keep, len(held) - line_start)
        return keep
