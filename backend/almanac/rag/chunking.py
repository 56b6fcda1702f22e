"""Split fetched documentation into retrieval-sized chunks at snippet and section boundaries.

Supported inputs (detected automatically, or forced with ``fmt``):

- Context7 text (v2 ``### Title`` / ``Source: <url>`` snippets, and the legacy v1
  ``TITLE:/DESCRIPTION:/SOURCE:/LANGUAGE:/CODE:`` records), snippets separated by a line of 20 or
  more hyphens;
- Markdown (split at ATX headings), reStructuredText (split at underlined section titles),
  plain text (paragraphs); HTML is reduced to Markdown-like text first.

Sections longer than ``max_tokens`` are split again with ``overlap_tokens`` of overlap; a fenced
code block is never cut unless it alone exceeds the limit (then each piece is re-fenced). Token
counts are a cheap estimate (:func:`estimate_tokens`), not a tokenizer's.
"""

from __future__ import annotations

import hashlib
import html.parser
import re
from dataclasses import dataclass
from typing import Literal

Format = Literal["auto", "context7", "markdown", "rst", "html", "text"]

DEFAULT_MAX_TOKENS = 256
DEFAULT_OVERLAP_TOKENS = 32

_TOKEN_RE = re.compile(r"\w{1,6}|[^\w\s]")  # a word of n characters counts ceil(n / 6)
_FENCE_RE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_BACKTICK_FENCE_RE = re.compile(r"^\s{0,3}(`{3,})")  # rst: "~~~~" is a section underline, not a fence
_SEPARATOR_RE = re.compile(r"^-{20,}\s*$")
_ATX_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_RST_ADORNMENT_RE = re.compile(r"^([=\-~^\"'`#*+:._])\1{2,}\s*$")
_SOURCE_RE = re.compile(r"^\s*(?:Source|SOURCE):\s*(\S+)")
_LEGACY_TITLE_RE = re.compile(r"^TITLE:\s*(.*\S)")
_LEGACY_HEADER_RE = re.compile(r"^(?:={5,}|[A-Z][A-Z ]+ SNIPPETS)\s*$")
_RULE_RE = re.compile(r"^\s*-{3,}\s*$")
_HTML_RE = re.compile(r"^\s*(?:<!doctype\s+html|<html\b)|<body\b|<head\b", re.IGNORECASE)
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable piece of a document, with the section title and URL it came from."""

    id: str
    text: str
    title: str
    source_url: str | None
    library: str | None
    position: int
    token_estimate: int

    @property
    def public(self) -> bool:
        """Whether the chunk documents public API (what a user imports) rather than something private or
        internal: see `is_public_title`. Derived from the section title, so it survives storage."""
        return is_public_title(self.title)


INTERNAL_MARK = "(internal)"  # appended by the collectors to the heading of an internal helper
DEPRECATED_MARK = "(deprecated)"  # after the name in the heading of an API its source deprecates (before any internal)
# The collectors' own one-line notes about where an API comes from (`local_docs` writes them with these formats):
# they say where it is defined, not what it does, so they are no summary of it however early in its passage they stand.
DEFINED_IN = "Defined in `{}`."
INHERITED_FROM = "(Inherited from `{}`.)"
ANOTHER_NAME_FOR = "(Another name for `{}`.)"
EXPORTED_AS = "Imported as `{}`."  # the public name of an API its package re-exports higher up (`fastapi.FastAPI`)


def _note_re(*notes: str) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(note).replace(re.escape("{}"), "[^`\\n]+") for note in notes))


NOTE_RE = _note_re(DEFINED_IN, INHERITED_FROM, ANOTHER_NAME_FOR, EXPORTED_AS)
EXPORTED_RE = _note_re(EXPORTED_AS)

_PRIVATE_NAME_RE = re.compile(r"(?:^|[.`\s])_(?!_)\w")  # `_name` or `pkg._mod.x`, not dunders such as __init__


def is_public_title(title: str) -> bool:
    """False for a section (or a part of one) about private or internal API: a heading in its breadcrumb
    marked `(internal)` — a helper not in its module's `__all__`, or a class used only by the module's own
    code — or naming an underscore name (`_helper`, `pkg._impl.Thing`). Prose sections are public."""
    for heading in title.split(" > "):
        if heading.rstrip().endswith(INTERNAL_MARK):
            return False
        code = heading.split("(", 1)[0]  # the name, not its parameters (`_x: int` is no private API)
        if "`" in heading and _PRIVATE_NAME_RE.search(code):
            return False
    return True


def is_deprecated_title(title: str) -> bool:
    """Whether a section (or a part of one) documents a deprecated API, or a member of a deprecated class: a heading
    in its breadcrumb marked `(deprecated)` after its name."""
    return any(f"` {DEPRECATED_MARK}" in heading for heading in title.split(" > "))


@dataclass(frozen=True, slots=True)
class _Section:
    title: str
    source_url: str | None
    body: str


def estimate_tokens(text: str) -> int:
    """Approximate the WordPiece tokens in ``text``: one per word or punctuation mark, more for long words."""
    return len(_TOKEN_RE.findall(text))


def chunk_document(
    text: str,
    *,
    source_url: str | None = None,
    library: str | None = None,
    title: str = "",
    fmt: Format = "auto",
    max_tokens: int = DEFAULT_MAX_TOKENS,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
    drop_duplicates: bool = True,
) -> list[Chunk]:
    """Split ``text`` into chunks of at most about ``max_tokens`` estimated tokens.

    Every chunk keeps the title and source URL of the section (or snippet) it came from, falling
    back to ``title``/``source_url`` of the document. Positions run 0..n-1 in document order and
    ids are stable for the same source, position and text. A piece whose text repeats an earlier
    one is dropped (``drop_duplicates``): copies only crowd the results. Empty or blank input gives
    no chunks; malformed input never raises.
    """
    if max_tokens < 1 or not 0 <= overlap_tokens < max_tokens:
        raise ValueError("need max_tokens >= 1 and 0 <= overlap_tokens < max_tokens")
    if not text.strip():
        return []
    kind = detect_format(text) if fmt == "auto" else fmt
    if kind == "html":
        text, kind = html_to_text(text), "markdown"
    sections = _SPLITTERS[kind](text, title)
    chunks: list[Chunk] = []
    seen: set[str] = set()
    for section in sections:
        url = section.source_url or source_url
        pieces = split_text(
            section.body, max_tokens=max_tokens, overlap_tokens=overlap_tokens, tilde_fences=kind != "rst"
        )
        for piece in pieces:
            if drop_duplicates and piece in seen:
                continue
            seen.add(piece)
            position = len(chunks)
            digest = hashlib.sha256(f"{library}\x00{url}\x00{position}\x00{piece}".encode()).hexdigest()
            chunks.append(
                Chunk(
                    id=digest[:24],
                    text=piece,
                    title=section.title or title,
                    source_url=url,
                    library=library,
                    position=position,
                    token_estimate=estimate_tokens(piece),
                )
            )
    return chunks


def detect_format(text: str) -> Literal["context7", "markdown", "rst", "html", "text"]:
    """Guess the format of ``text`` from cheap structural signals (first match wins)."""
    if _HTML_RE.search(text[:4000]):
        return "html"
    lines = text.splitlines()
    if any(_is_separator(lines, i) for i in range(len(lines))) or any(
        _LEGACY_TITLE_RE.match(line) or _SOURCE_RE.match(line) for line in lines
    ):
        return "context7"
    if any(_ATX_RE.match(lines[i]) for i in _unfenced_indices(lines)):
        return "markdown"
    if any(_rst_title_at(lines, i) for i in range(len(lines))):
        return "rst"
    return "markdown" if any(_FENCE_RE.match(line) for line in lines) else "text"


def split_text(text: str, *, max_tokens: int, overlap_tokens: int, tilde_fences: bool = True) -> list[str]:
    """Pack paragraphs and fenced code blocks of ``text`` into pieces of at most ``max_tokens``.

    Consecutive pieces share up to ``overlap_tokens`` of trailing prose; code blocks are kept
    whole unless one alone is too long, in which case it is cut at line boundaries and re-fenced.
    """
    fence_re = _FENCE_RE if tilde_fences else _BACKTICK_FENCE_RE
    parts: list[str] = []
    for block in _blocks(text, fence_re):
        if estimate_tokens(block) <= max_tokens:
            parts.append(block)
        elif fence_re.match(block):
            parts.extend(_split_code(block, max_tokens))
        else:
            parts.extend(_split_prose(block, max_tokens))
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for part in parts:
        cost = estimate_tokens(part)
        if current and size + cost > max_tokens:
            pieces.append("\n\n".join(current))
            tail = _overlap_tail(current[-1], overlap_tokens)
            current, size = ([tail], estimate_tokens(tail)) if tail else ([], 0)
            if size + cost > max_tokens:
                current, size = [], 0
        current.append(part)
        size += cost
    if current:
        pieces.append("\n\n".join(current))
    return pieces


# --- sections per format ---------------------------------------------------------------------


def _context7_sections(text: str, title: str) -> list[_Section]:
    # Separators are honoured even inside what looks like a fence: snippets with unbalanced
    # fences are common in saved outputs, and one must not swallow the rest of the document.
    lines = text.splitlines()
    separators = {i for i in range(len(lines)) if _is_separator(lines, i)}
    starts = {0} | {i + 1 for i in separators}
    starts |= {i for i in _unfenced_indices(lines) if _LEGACY_TITLE_RE.match(lines[i])}
    bounds = sorted(starts)
    sections = []
    for start, end in zip(bounds, [*bounds[1:], len(lines)], strict=True):
        snippet = [
            ln
            for i, ln in enumerate(lines[start:end], start)
            if i not in separators and not _LEGACY_HEADER_RE.match(ln)
        ]
        while snippet and (not snippet[-1].strip() or _RULE_RE.match(snippet[-1])):
            snippet.pop()
        body = "\n".join(snippet).strip()
        if not body:
            continue
        heading = next((m.group(2) for ln in snippet if (m := _ATX_RE.match(ln))), None)
        legacy = next((m.group(1) for ln in snippet if (m := _LEGACY_TITLE_RE.match(ln))), None)
        url = next((m.group(1) for ln in snippet if (m := _SOURCE_RE.match(ln))), None)
        sections.append(_Section(title=legacy or heading or title, source_url=url, body=body))
    return sections


def _markdown_sections(text: str, title: str) -> list[_Section]:
    lines = text.splitlines()
    starts = [(i, m) for i in _unfenced_indices(lines) if (m := _ATX_RE.match(lines[i]))]
    sections = []
    trail: list[tuple[int, str]] = []
    bounds = [(0, None), *[(i, m) for i, m in starts]]
    for (start, match), (end, _) in zip(bounds, [*bounds[1:], (len(lines), None)], strict=True):
        if match is not None:
            level = len(match.group(1))
            trail = [(lv, t) for lv, t in trail if lv < level] + [(level, match.group(2))]
        body = "\n".join(lines[start:end]).strip()
        if body:
            crumb = " > ".join(t for _, t in trail if t)
            sections.append(_Section(title=crumb or title, source_url=None, body=body))
    return sections


def _rst_sections(text: str, title: str) -> list[_Section]:
    lines = text.splitlines()
    sections: list[_Section] = []
    current_title, start = title, 0
    for i in range(len(lines)):
        if _rst_title_at(lines, i):
            has_overline = i > 0 and _RST_ADORNMENT_RE.match(lines[i - 1]) is not None
            cut = i - 1 if has_overline else i
            body = "\n".join(lines[start:cut]).strip()
            if body:
                sections.append(_Section(title=current_title, source_url=None, body=body))
            current_title, start = lines[i].strip(), cut
    body = "\n".join(lines[start:]).strip()
    if body:
        sections.append(_Section(title=current_title, source_url=None, body=body))
    return sections


def _text_sections(text: str, title: str) -> list[_Section]:
    return [_Section(title=title, source_url=None, body=text.strip())]


_SPLITTERS = {
    "context7": _context7_sections,
    "markdown": _markdown_sections,
    "rst": _rst_sections,
    "text": _text_sections,
}


def open_fence(text: str) -> str | None:
    """The fence (```` ``` ```` or `~~~`, as long as it was opened) that `text` leaves open at its end, if any:
    what must follow it so that no later heading is swallowed by a code block."""
    return _scan_fences(text.splitlines())[1]


def without_headings(text: str) -> str:
    """`text` with its Markdown headings (outside code blocks) made bold paragraphs: for text placed under a
    heading of its own, such as a docstring's `## Example` under its API's heading, which would otherwise
    end the API's section and start one of its own."""
    lines = text.splitlines()
    for i in _unfenced_indices(lines):
        if m := _ATX_RE.match(lines[i]):
            lines[i] = f"**{m.group(2)}**" if m.group(2) else ""
    return "\n".join(lines)


def _unfenced_indices(lines: list[str]) -> list[int]:
    """The indices of lines that are outside fenced code blocks (fence lines excluded)."""
    return _scan_fences(lines)[0]


def _scan_fences(lines: list[str]) -> tuple[list[int], str | None]:
    """The indices of the lines outside fenced code blocks (fence lines excluded), and the fence left open
    at the end (None if every block is closed). A block closes with a fence of its own character, at least
    as long."""
    fence: str | None = None
    outside: list[int] = []
    for i, line in enumerate(lines):
        m = _FENCE_RE.match(line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
            fence = None
        elif fence is None:
            outside.append(i)
    return outside, fence


def _is_separator(lines: list[str], i: int) -> bool:
    """True for a snippet separator: 20+ hyphens that are not an rst over- or underline."""
    if not _SEPARATOR_RE.match(lines[i]):
        return False
    underline = i > 0 and _rst_title_at(lines, i - 1)
    overline = i + 1 < len(lines) and _rst_title_at(lines, i + 1) and lines[i + 2].strip() == lines[i].strip()
    return not underline and not overline


def _rst_title_at(lines: list[str], i: int) -> bool:
    """True when line ``i`` is an rst section title followed by an adornment at least as long."""
    if i + 1 >= len(lines) or not lines[i].strip() or lines[i][0].isspace() or _FENCE_RE.match(lines[i]):
        return False
    if _RST_ADORNMENT_RE.match(lines[i]) or not _RST_ADORNMENT_RE.match(lines[i + 1]):
        return False
    after_blank = i == 0 or not lines[i - 1].strip() or _RST_ADORNMENT_RE.match(lines[i - 1]) is not None
    return after_blank and len(lines[i + 1].rstrip()) >= len(lines[i].rstrip())


# --- blocks and long-block splitting ------------------------------------------------------------


def _blocks(text: str, fence_re: re.Pattern[str]) -> list[str]:
    """Split text into paragraphs and whole fenced code blocks, in order."""
    blocks: list[str] = []
    current: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        m = fence_re.match(line)
        if fence is None and m:
            if current:
                blocks.append("\n".join(current))
            current, fence = [line], m.group(1)
        elif fence is not None:
            current.append(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                blocks.append("\n".join(current))
                current, fence = [], None
        elif not line.strip():
            if current:
                blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        blocks.append("\n".join(current))
    return [b.strip("\n") for b in blocks if b.strip()]


def _split_code(block: str, max_tokens: int) -> list[str]:
    """Cut an over-long fenced block at line boundaries; each piece is fenced again."""
    lines = block.splitlines()
    opening = lines[0]
    closing = lines[-1] if len(lines) > 1 and _FENCE_RE.match(lines[-1]) else opening.strip()[:3]
    inner = lines[1:-1] if len(lines) > 1 and _FENCE_RE.match(lines[-1]) else lines[1:]
    budget = max(1, max_tokens - estimate_tokens(opening) - estimate_tokens(closing))
    pieces: list[list[str]] = [[]]
    size = 0
    for line in inner:
        for part in _hard_wrap(line, budget):
            cost = estimate_tokens(part) or 1
            if pieces[-1] and size + cost > budget:
                pieces.append([])
                size = 0
            pieces[-1].append(part)
            size += cost
    return ["\n".join([opening, *p, closing]) for p in pieces if p]


def _split_prose(block: str, max_tokens: int) -> list[str]:
    """Cut an over-long paragraph into sentences (or word runs) of at most ``max_tokens``."""
    out: list[str] = []
    for sentence in _SENTENCE_END_RE.split(block):
        out.extend(_hard_wrap(sentence, max_tokens))
    return out


def _hard_wrap(text: str, max_tokens: int) -> list[str]:
    """Split text at whitespace (or, for one huge word, by characters) into runs within the limit."""
    if estimate_tokens(text) <= max_tokens:
        return [text]
    runs: list[str] = []
    words: list[str] = []
    size = 0
    for word in text.split(" "):
        cost = estimate_tokens(word)
        if cost > max_tokens:
            step = max(1, max_tokens * 3)
            runs.extend(word[j : j + step] for j in range(0, len(word), step))
            continue
        if words and size + cost > max_tokens:
            runs.append(" ".join(words))
            words, size = [], 0
        words.append(word)
        size += cost
    if words:
        runs.append(" ".join(words))
    return runs


def _overlap_tail(part: str, overlap_tokens: int) -> str:
    """Trailing words of a prose part worth about ``overlap_tokens``; nothing for code."""
    if overlap_tokens <= 0 or _FENCE_RE.match(part):
        return ""
    words = part.split()
    tail: list[str] = []
    size = 0
    for word in reversed(words):
        size += estimate_tokens(word)
        if size > overlap_tokens:
            break
        tail.append(word)
    return " ".join(reversed(tail)) if len(tail) < len(words) else ""


# --- HTML ---------------------------------------------------------------------------------------


class _HtmlToText(html.parser.HTMLParser):
    _BLOCK = frozenset({"p", "div", "section", "article", "li", "tr", "br", "table", "ul", "ol", "dd", "dt"})
    _SKIP = frozenset({"script", "style", "noscript", "svg", "head", "nav", "footer"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self._skip = 0
        self._pre = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skip += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self.out.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag == "pre":
            self._pre = True
            self.out.append("\n\n```\n")
        elif tag in self._BLOCK:
            self.out.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag == "pre":
            self._pre = False
            self.out.append("\n```\n\n")
        elif re.fullmatch(r"h[1-6]", tag) or tag in self._BLOCK:
            self.out.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.out.append(data if self._pre else re.sub(r"\s+", " ", data))


def html_to_text(markup: str) -> str:
    """Reduce HTML to Markdown-like text: headings become ``#`` lines, ``<pre>`` becomes fenced code."""
    parser = _HtmlToText()
    parser.feed(markup)
    parser.close()
    text = "".join(parser.out)
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
