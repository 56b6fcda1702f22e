"""The Python documentation's library reference, read from its reStructuredText sources.

The standard library's docstrings are terse, and the modules written in C (`math`, `itertools`, `time`)
have little more than signatures; the reference at docs.python.org says what each API is for, in the
words developers use ("Return the path to an executable which would be run…" for `shutil.which`,
"suppresses any of the specified exceptions if they occur in the body of a with statement" for
`contextlib.suppress`). Debian's `pythonX.Y-doc` package installs its sources under
`/usr/share/doc/pythonX.Y/html/_sources/library/*.rst.txt` (`reference_dir` finds them);
`descriptions` gives each documented API's description as plain text, by the API's `popularity.key`, and the
local index searches it as one more field of the passages documenting that API (`fields.py`).

Only the parts of reST the library reference uses are read: the `module` / `currentmodule` directives,
the object directives (`function`, `class`, `method`, `attribute`, `data`, `exception`, `decorator`, the
coroutine and awaitable forms…) and the members nested in a class; objects documented before any `module`
directive are builtins (`functions`, `stdtypes`, `exceptions`: `isinstance`, `str.split`). Inline roles
(`:func:`os.access``) become code spans, other directives' markers drop out (their text stays).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from almanac.rag.popularity import api_key

DOC_ROOT = Path("/usr/share/doc")
OBJECTS = frozenset(
    {
        "function",
        "class",
        "method",
        "attribute",
        "data",
        "exception",
        "decorator",
        "decoratormethod",
        "coroutinefunction",
        "coroutinemethod",
        "awaitablefunction",
        "awaitablemethod",
        "classmethod",
        "staticmethod",
        "abstractmethod",
        "property",
    }
)
BUILTINS = "builtins"
CALLABLES = frozenset({"function", "class", "exception", "decorator", "coroutinefunction", "awaitablefunction"})
MIN_DATA_USES = 20  # data fewer modules use is documented only where its module documents it itself
CLASSES = frozenset({"class", "exception"})
_DIRECTIVE = re.compile(r"^(\s*)\.\. (?:py:)?([a-z-]+)::\s?(.*)$")
_OPTION = re.compile(r"^\s*:[\w-]+:")
_ROLE = re.compile(r":[\w:-]+:`([^`]*)`")
_TITLED = re.compile(r"^(.*?)\s*<[^>]*>$")
_LINK = re.compile(r"`([^`<]+?)\s*<[^>`]+>`_{1,2}")
_FOOTNOTE = re.compile(r"\s*\[#?[\w-]*\]_")
_LITERAL = re.compile(r"``(.+?)``")
_EMPHASIS = re.compile(r"(?<![\w*`])\*{1,2}([^*`\s][^*`]*?)\*{1,2}(?![\w*`])")
_COMMENT = re.compile(r"^\s*\.\.(?:\s|$)(?!\s*[\w-]+::)")  # `.. a comment`, `.. _label:`
_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+]){3,}\s*$")
_SKIPPED = frozenset({"index", "sectionauthor", "moduleauthor", "toctree", "tabularcolumns", "highlight", "include"})
_SKIPPED |= frozenset({"literalinclude", "image", "figure", "testsetup", "testcleanup", "testoutput", "rubric"})


@dataclass
class Entry:
    """One documented object: its qualified name and description (plain text, code as code spans)."""

    name: str
    text: str
    members: list[Entry] = field(default_factory=list)
    signature: str = ""  # what follows the name in the directive: `(key, default=None)`; empty for data
    kind: str = ""  # the directive: `function`, `class`, `data`…


@dataclass
class ModulePage:
    """A module's part of the reference: its documented objects."""

    module: str
    entries: list[Entry] = field(default_factory=list)

    def all_entries(self) -> Iterator[Entry]:
        """The module's objects, a class's members after it."""
        for entry in self.entries:
            yield entry
            yield from entry.members


def reference_dir(version: tuple[int, int] | None = None, root: Path = DOC_ROOT) -> Path | None:
    """The folder of the library reference's sources for a Python version (default: this interpreter's),
    if the documentation is installed."""
    major, minor = version or sys.version_info[:2]
    folder = root / f"python{major}.{minor}" / "html" / "_sources" / "library"
    return folder if folder.is_dir() else None


def python_docs(setting: str) -> Path | None:
    """The folder PYTHON_DOCS_DIR names: `auto` is `reference_dir()` (None if not installed), `none` None."""
    value = setting.strip()
    if not value or value.lower() == "none":
        return None
    return reference_dir() if value.lower() == "auto" else Path(value)


def descriptions(folder: Path) -> dict[str, str]:
    """The description of every API a folder of reference pages (`*.rst.txt` or `*.rst`) documents, as
    plain text, by `popularity.api_key` (two objects with one key, such as a module function and its
    re-export, share the text)."""
    texts: dict[str, list[str]] = {}
    for page in read_reference(folder).values():
        for entry in page.all_entries():
            k = api_key(entry.name)
            if entry.text:
                texts.setdefault(k, []).append(entry.text)
    return {k: "\n\n".join(parts) for k, parts in texts.items()}


def undocumented(
    pages: Mapping[str, ModulePage], documented: Iterable[str], uses: Mapping[str, int]
) -> dict[str, list[Entry]]:
    """Per module, the module-level objects its reference page documents that no passage does (`documented`: the
    dotted names the passages document): functions a module imports without exporting them (`hashlib.scrypt`,
    from OpenSSL, outside `__all__`) and data neither `ast` nor introspection turns into a passage (`sys.argv`,
    `os.environ`, `subprocess.PIPE`) — data only where code uses it (`uses`: the number of indexed modules using
    each `popularity.key`, at least MIN_DATA_USES), as the constants of `errno` and `stat`, whose short passages
    match a question's every word ("get the size of a file": `stat.ST_SIZE`), are not. An object counts as
    documented when a documented name has its `popularity.api_key`. Members of classes (their attributes, the
    methods of objects the reference names in lower case, `loop.run_in_executor`), private names and objects
    without a description are left out."""
    keys = {api_key(name) for name in documented}
    found: dict[str, list[Entry]] = {}
    for module, page in pages.items():
        for entry in page.entries:
            owner, _, last = entry.name.rpartition(".")
            if owner not in (module, "") or last.startswith("_") or not entry.text.strip():
                continue
            k = api_key(entry.name)
            if k in keys or (entry.kind not in CALLABLES and uses.get(k, 0) < MIN_DATA_USES):
                continue
            found.setdefault(module, []).append(entry)
    return found


def entries_markdown(entries: Iterable[Entry]) -> str:
    """Reference objects as passages of a module's Markdown: a `##` heading naming each, its description."""
    return "\n\n".join(f"## `{entry.name}{entry.signature}`\n\n{entry.text}" for entry in entries)


def to_bytes(texts: Mapping[str, str]) -> bytes | None:
    """`descriptions` for storage (None when there are none)."""
    return json.dumps(texts, separators=(",", ":"), sort_keys=True).encode() if texts else None


def from_bytes(data: bytes | None) -> dict[str, str]:
    """Stored `descriptions` (none for an index stored without them)."""
    loaded = json.loads(data) if data else {}
    return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def read_reference(folder: Path) -> dict[str, ModulePage]:
    """Every module documented in a folder of reference pages, by its dotted name."""
    pages: dict[str, ModulePage] = {}
    for path in sorted([*folder.glob("*.rst.txt"), *folder.glob("*.rst")]):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for page in module_pages(text):
            pages.setdefault(page.module, ModulePage(page.module)).entries += page.entries
    return pages


def module_pages(text: str) -> list[ModulePage]:
    """The modules one reST page documents, with their objects (see the module docstring)."""
    lines = text.expandtabs().splitlines()
    pages: dict[str, ModulePage] = {}
    current: ModulePage | None = None
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        if not match or match.group(1):  # text, or an indented directive outside any object
            i += 1
            continue
        kind, argument = match.group(2), match.group(3).strip()
        body, i = _block(lines, i, 0)
        if kind in ("module", "currentmodule") and argument:
            current = pages.setdefault(argument, ModulePage(argument))
        elif kind in OBJECTS:
            current = current or pages.setdefault(BUILTINS, ModulePage(BUILTINS))
            current.entries += _entries(kind, argument, body, current.module, None)
    return [page for page in pages.values() if page.entries]


def _block(lines: list[str], start: int, indent: int) -> tuple[list[str], int]:
    """The lines of the directive at `start` (its continuation and indented body), and the next index."""
    i = start + 1
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
        i += 1
    return lines[start + 1 : i], i


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _entries(kind: str, argument: str, body: list[str], module: str, owner: str | None) -> list[Entry]:
    """The object(s) a directive documents: one per stacked signature, sharing the description; a
    class's nested member directives become its members."""
    signatures, rest = _signatures(argument, body)
    named = []
    for signature in signatures:
        name, paren, arguments = signature.partition("(")
        if re.fullmatch(r"[A-Za-z_][\w.]*", name.strip()):
            named.append((_qualify(name.strip(), module, owner), paren + arguments.strip() if paren else ""))
    if not named:
        return []
    inner_owner = named[0][0].removeprefix(module + ".") if kind in CLASSES else owner
    while rest and _OPTION.match(rest[0]):  # the directive's options (`:async:`, `:noindex:`)
        rest = rest[1:]
    own, members = _description(rest, kind, module, inner_owner)
    return [Entry(name, own, members, signature, kind) for name, signature in named]


def _signatures(argument: str, body: list[str]) -> tuple[list[str], list[str]]:
    """A directive's signature(s) — continued with a backslash, or stacked on the next lines at one
    indentation — and the rest of its lines."""
    signatures = [argument]
    rest = body
    stacked: int | None = None
    while rest and rest[0].strip() and not _OPTION.match(rest[0]):
        if signatures[-1].endswith("\\"):
            signatures[-1] = signatures[-1][:-1].rstrip() + " " + rest[0].strip()
        elif stacked is None or _indent(rest[0]) == stacked:
            stacked = _indent(rest[0])
            signatures.append(rest[0].strip())
        else:
            break
        rest = rest[1:]
    return [" ".join(s.removesuffix("\\").split()) for s in signatures], rest


def _qualify(name: str, module: str, owner: str | None) -> str:
    """`which` in `shutil` → `shutil.which`; `Path.mkdir` → `pathlib.Path.mkdir`; a member of a class →
    `module.Class.member`; a name already under its module stays as it is."""
    if module == BUILTINS:  # as users write them: `isinstance`, `str.split`, `SystemExit.code`
        return f"{owner}.{name}" if owner is not None and "." not in name else name
    if name.startswith(module + "."):
        return name
    if owner is not None and "." not in name:
        return f"{module}.{owner}.{name}"
    return f"{module}.{name}"


def _description(body: list[str], kind: str, module: str, owner: str | None) -> tuple[str, list[Entry]]:
    """A directive's own text (Markdown) and, for a class, the members nested in it."""
    indent = min((_indent(line) for line in body if line.strip()), default=0)
    text_lines: list[str] = []
    members: list[Entry] = []
    i = 0
    while i < len(body):
        line = body[i]
        match = _DIRECTIVE.match(line)
        if match and _indent(line) == indent and match.group(2) in OBJECTS and kind in CLASSES:
            inner, i = _block(body, i, indent)
            members += _entries(match.group(2), match.group(3).strip(), inner, module, owner)
            continue
        if (match and match.group(2) in _SKIPPED) or _COMMENT.match(line):
            _, i = _block(body, i, _indent(line))
            continue
        if match:
            label = match.group(2)
            argument = match.group(3).strip()
            if label in ("versionadded", "versionchanged", "deprecated"):
                text_lines.append(" " * _indent(line) + f"{label.replace('version', '').capitalize()} in {argument}")
            elif label not in ("note", "warning", "seealso", "important", "caution", "doctest", "testcode"):
                text_lines.append(" " * _indent(line) + argument)
            i += 1
            continue
        text_lines.append(line)
        i += 1
    return _markdown(text_lines), members


def _markdown(lines: list[str]) -> str:
    """reST body lines as plain Markdown paragraphs: dedented, inline markup made plain."""
    indent = min((_indent(line) for line in lines if line.strip()), default=0)
    paragraphs: list[str] = []
    current: list[str] = []
    for line in lines:
        if not line.strip():
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        stripped = line[indent:].rstrip()
        if _UNDERLINE.match(stripped.strip()):
            continue
        current.append(stripped.strip() if not stripped.startswith(">>>") else stripped)
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(_inline(p.removesuffix("::") + (":" if p.endswith("::") else "")) for p in paragraphs)


def _inline(text: str) -> str:
    """reST inline markup as Markdown: roles and literals become code spans, emphasis plain words."""

    def role(match: re.Match[str]) -> str:
        target = match.group(1).lstrip("!~")
        titled = _TITLED.match(target)
        return f"`{titled.group(1) if titled else target}`"

    text = _LINK.sub(lambda m: m.group(1), _FOOTNOTE.sub("", text))
    text = _LITERAL.sub(lambda m: f"`{m.group(1)}`", text)
    text = _ROLE.sub(role, text)
    text = _EMPHASIS.sub(lambda m: m.group(1), text)
    return text.replace("\\", "")
