"""The offline model's documentation answer: the best passage first and compact, the rest as links.

`retrieve_documentation` returns Markdown passages (`rag/format.py`: "### N. <heading path>",
a "Library: … · Source: …" line, then the text). A person reading the offline model's answer wants
what a real model would lead with: the symbol, its signature, the docstring's first paragraph and an
example when the docs have one — not six raw passages. Passages of one symbol are merged, each
further symbol is one line with its first sentence and a link. Pure functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from almanac.text.code import label_code

_PASSAGE = re.compile(r"^### (?P<number>\d+)\. (?P<title>.+)\n(?P<where>Library: .*)\n", re.M)
# a heading's marks after the name (`rag.chunking`'s "(deprecated)", "(internal)") are no part of the signature
_SIGNATURE = re.compile(r"^#{1,6} (?P<kind>class )?`(?P<signature>[^`]+)`(?: \((?:deprecated|internal)\))*\s*$", re.M)
_FENCED = re.compile(r"^```[\w+-]*\n.*?^```", re.M | re.S)
# the index's notes on where an API comes from (`rag.chunking`'s `DEFINED_IN`, `EXPORTED_AS`): no part of its summary
_NOTE_PARAGRAPH = re.compile(r"^(?:Defined in|Imported as) `[^`\n]+`\.$")
_IMPORTED_AS = re.compile(r"^Imported as `(?P<name>[^`\n]+)`\.$", re.M)
MAX_PARAGRAPH_CHARS = 900
MAX_EXAMPLE_LINES = 25
MAX_MORE = 5
SHORT_PARAGRAPH_CHARS = 120


@dataclass(frozen=True, slots=True)
class Passage:
    title: str
    library: str
    url: str
    text: str

    @property
    def symbol(self) -> str:
        """The heading path's last part as code, e.g. "asyncio.tasks.Task.cancel(self, msg=None)" (whatever kind of
        object the words before it say it is: "class", "property")."""
        last = self.title.split(" > ")[-1].strip().removeprefix("Module ")
        return last.split("`")[1] if last.count("`") >= 2 else last.removeprefix("class ").strip("`")

    @property
    def name(self) -> str:
        """The symbol's public dotted name (the source link's anchor where it has one, else the name the passage says
        it is imported as), without parameters."""
        anchor = self.url.partition("#")[2]
        if anchor and not anchor.startswith("module-"):
            return anchor
        if imported := _IMPORTED_AS.search(
            self.text
        ):  # `fastapi.applications.FastAPI` is imported as `fastapi.FastAPI`
            return imported["name"]
        name = re.match(r"[\w.]*", self.symbol.removeprefix("async "))
        return (name.group(0) if name else "").removesuffix(".__init__") or self.symbol


def parse_passages(markdown: str) -> list[Passage]:
    """The passages of a `retrieve_documentation` result, in order (empty when it has none)."""
    matches = list(_PASSAGE.finditer(markdown))
    passages = []
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(markdown)
        where = dict(part.split(": ", 1) for part in match["where"].split(" · ") if ": " in part)
        passages.append(
            Passage(
                match["title"].strip(),
                where.get("Library", ""),
                where.get("Source", ""),
                markdown[match.end() : end].strip(),
            )
        )
    return passages


def merge_by_symbol(passages: list[Passage]) -> list[Passage]:
    """One passage per symbol (its pieces joined in order, repeated text once), best first."""
    merged: dict[str, Passage] = {}
    for passage in passages:
        key = passage.name or passage.title
        if key not in merged:
            merged[key] = passage
            continue
        first = merged[key]
        if passage.text not in first.text:
            merged[key] = Passage(
                first.title, first.library, first.url or passage.url, first.text + "\n\n" + passage.text
            )
    return list(merged.values())


_NOTE = re.compile(r"^Note: (?P<note>.+)$", re.M)
# the note every search without a library gets: nothing went other than asked
_ROUTINE_NOTE = "No library was named"


def notes_of(markdown: str) -> list[str]:
    """The result's notes that say the search went other than asked (a library the documentation does not have,
    a word read as another, another source), before its first passage."""
    head = _PASSAGE.split(markdown, maxsplit=1)[0]
    return [m["note"].strip() for m in _NOTE.finditer(head) if not m["note"].startswith(_ROUTINE_NOTE)]


def compact_answer(markdown: str, cite: str) -> str | None:
    """The answer to show for a documentation result, or None when it holds no passage."""
    passages = merge_by_symbol(parse_passages(markdown))
    if not passages:
        return None
    best, more = passages[0], passages[1:]
    library = best.library.rsplit("/", 1)[-1] or "the"
    parts = [f"(Offline model: the best match in the {library} documentation, quoted rather than explained [{cite}].)"]
    parts += [f"*Note: {note}*" for note in notes_of(markdown)]
    heading = f"**`{best.name}`**"
    parts.append(f"{heading} — [source]({best.url})" if best.url else heading)
    signature, paragraph, example = _essentials(best)
    if signature:
        parts.append(f"```python\n{signature}\n```")
    if paragraph:
        parts.append(paragraph)
    if example:
        parts.append("Example from the documentation:\n\n" + example)
    if more:
        lines = ["Also relevant:"]
        for passage in more[:MAX_MORE]:
            link = f"[`{passage.name}`]({passage.url})" if passage.url else f"`{passage.name}`"
            sentence = _first_sentence(_essentials(passage)[1])
            lines.append(f"- {link}" + (f" — {sentence}" if sentence else ""))
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _essentials(passage: Passage) -> tuple[str, str, str]:
    """(signature, the docstring's first paragraph, the first example) of a passage."""
    text = label_code(passage.text)
    found = _SIGNATURE.search(text)
    signature = _clean_signature(found["signature"], passage.name, is_class=bool(found["kind"])) if found else ""
    body = text[found.end() :] if found else text
    example_match = _FENCED.search(body)
    example = _trim_example(example_match.group(0)) if example_match else ""
    prose = _FENCED.sub("", body)
    paragraphs = [
        p.strip()
        for p in re.split(r"\n\s*\n", prose)
        if p.strip() and not p.lstrip().startswith("#") and not _NOTE_PARAGRAPH.match(p.strip())
    ]
    paragraph = " ".join(paragraphs[0].split()) if paragraphs else ""
    if len(paragraph) < SHORT_PARAGRAPH_CHARS and len(paragraphs) > 1:  # a one-line summary: add what follows
        paragraph += "\n\n" + " ".join(paragraphs[1].split())
    if len(paragraph) > MAX_PARAGRAPH_CHARS:
        paragraph = paragraph[:MAX_PARAGRAPH_CHARS].rsplit(" ", 1)[0] + " …"
    return signature, paragraph, example


def _clean_signature(signature: str, public: str, *, is_class: bool) -> str:
    """A signature as the user writes the call: its public name, no `self`/`cls`, `__init__` shown
    as the class, a coroutine awaited, a class without its private (or `object`) bases."""
    awaited = signature.startswith("async ")
    signature = re.sub(r"\((self|cls)(, )?", "(", signature.removeprefix("async "), count=1).replace(".__init__(", "(")
    name, paren, rest = signature.partition("(")
    if public and name.rsplit(".", 1)[-1] == public.rsplit(".", 1)[-1]:
        name = public
    if is_class and paren:
        bases = [b.strip() for b in rest.rstrip(")").split(",") if b.strip()]
        shown = [b for b in bases if b != "object" and not b.startswith("_") and "._" not in b]
        return "class " + name + (f"({', '.join(shown)})" if shown else "")
    return ("await " if awaited else "") + name + paren + rest


def _trim_example(block: str) -> str:
    lines = block.split("\n")
    if len(lines) <= MAX_EXAMPLE_LINES + 2:
        return block
    return "\n".join([*lines[: MAX_EXAMPLE_LINES + 1], "# …", lines[-1]])


def _first_sentence(paragraph: str) -> str:
    paragraph = paragraph.lstrip("-* ")
    match = re.match(r"(.+?[.!?])(\s|$)", paragraph)
    sentence = match.group(1) if match else paragraph
    return sentence if len(sentence) <= 200 else sentence[:200].rsplit(" ", 1)[0] + " …"
