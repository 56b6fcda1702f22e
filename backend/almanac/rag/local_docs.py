"""Collect the local documentation: Markdown / reStructuredText / text files under configured
folders, the documentation of installed Python distributions (the README in their metadata, and
the docstrings and signatures of their public modules, read with `ast` — never imported), and,
optionally, the standard library's modules the same way. A public module's page also documents the
classes and functions it re-exports from private modules, under their public names (`reexports.py`)."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import importlib.util
import logging
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import cast

from almanac.rag.chunking import Format
from almanac.rag.reexports import Definition, SourceOf, reexports

log = logging.getLogger(__name__)
DOC_SUFFIXES = {".md": "markdown", ".markdown": "markdown", ".rst": "rst", ".txt": "text"}
SKIP_PARTS = {"tests", "test", "testing", "_vendor", "vendor", "vendored", "examples", "benchmarks", "docs_src"}
STDLIB_SKIP = {
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "lib2to3",
    "ensurepip",
    "pydoc_data",
    "antigravity",
    "this",
    "turtle",
    "xxlimited",
    "xxsubtype",
    "msilib",
    "venv",
    "encodings",
}
MAX_MODULES = 400
MAX_FILE_BYTES = 600_000


@dataclass(frozen=True)
class Library:
    id: str
    title: str
    description: str
    kind: str  # "package", "stdlib" or "folder"
    version: str
    url: str | None


@dataclass(frozen=True)
class Document:
    library_id: str
    title: str
    text: str
    fmt: Format  # markdown, rst or text
    source_url: str | None


def normalise(name: str) -> str:
    """PEP 503 normalisation: `Foo_Bar.baz` → `foo-bar-baz`."""
    return re.sub(r"[-_.]+", "-", name).lower()


# --- folders -------------------------------------------------------------------------------------


def folder_documents(folder: Path) -> tuple[list[Library], list[Document]]:
    """A docs folder as libraries: each immediate subfolder is one (`/local/<name>`), and files
    directly inside form a library named after the folder itself."""
    libraries: list[Library] = []
    documents: list[Document] = []
    if not folder.is_dir():
        return libraries, documents
    groups: dict[str, list[Path]] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix.lower() in DOC_SUFFIXES and not any(p.startswith(".") for p in path.parts):
            relative = path.relative_to(folder)
            group = relative.parts[0] if len(relative.parts) > 1 else folder.name
            groups.setdefault(group, []).append(path)
    for group, paths in groups.items():
        library_id = f"/local/{normalise(group)}"
        libraries.append(Library(library_id, group, f"Documents under {folder / group}", "folder", "", None))
        for path in paths:
            text = _read(path)
            if text:
                fmt = cast(Format, DOC_SUFFIXES[path.suffix.lower()])
                documents.append(Document(library_id, path.stem, text, fmt, str(path.relative_to(folder.parent))))
    return libraries, documents


# --- installed distributions -------------------------------------------------------------------


def distribution_documents(names: Iterable[str] | None = None) -> Iterator[tuple[Library, list[Document]]]:
    """Each installed distribution (or only those named) as a library with its documents."""
    wanted = {normalise(n) for n in names} if names is not None else None
    seen: set[str] = set()
    for dist in sorted(metadata.distributions(), key=lambda d: normalise(_meta(d).get("Name") or "")):
        meta = _meta(dist)
        name = meta.get("Name") or ""
        key = normalise(name)
        if not name or key in seen or (wanted is not None and key not in wanted):
            continue
        seen.add(key)
        url = _project_url(dist)
        library = Library(f"/pypi/{key}", name, (meta.get("Summary") or "")[:500], "package", dist.version or "", url)
        documents = []
        readme = meta.get("Description") or meta.get_payload() or ""
        if isinstance(readme, str) and readme.strip():
            fmt: Format = "rst" if "rst" in (meta.get("Description-Content-Type") or "") else "markdown"
            documents.append(Document(library.id, f"{name} README", readme, fmt, url))
        modules = 0
        files = {
            dotted: Path(str(dist.locate_file(file)))
            for file in dist.files or ()
            if (dotted := _module_name(file.parts, private=True))
        }
        source_of = _source_reader(files)
        # Shallow modules first: a package's public surface matters more than its internals.
        for file in sorted(dist.files or (), key=lambda f: (len(f.parts), str(f))):
            if modules >= MAX_MODULES:
                break
            module = _module_name(file.parts)
            if module is None:
                continue
            found = source_of(module)
            text = found[0] if found else ""
            doc = (
                module_markdown(text, module, is_package=file.name == "__init__.py", source_of=source_of)
                if text
                else ""
            )
            if doc:
                modules += 1
                documents.append(Document(library.id, module, doc, "markdown", url))
        yield library, documents


def _meta(dist: metadata.Distribution) -> Message:
    """A distribution's metadata as the e-mail message it is (typed loosely by importlib)."""
    return dist.metadata  # type: ignore[return-value]


def _project_url(dist: metadata.Distribution) -> str:
    meta = _meta(dist)
    urls = {}
    for entry in meta.get_all("Project-URL") or []:
        label, _, value = entry.partition(",")
        urls[label.strip().lower()] = value.strip()
    for label in ("documentation", "docs", "homepage", "home", "source", "repository"):
        if urls.get(label, "").startswith("http"):
            return urls[label]
    home = meta.get("Home-page") or ""
    name = normalise(meta.get("Name") or "")
    return home if home.startswith("http") else f"https://pypi.org/project/{name}/"


def _module_name(parts: tuple[str, ...], *, private: bool = False) -> str | None:
    """The dotted module name of a file path inside site-packages; None for non-modules, tests and
    vendored code, and (unless `private`) for private modules."""
    if not parts or not parts[-1].endswith(".py") or ".." in parts or parts[0].endswith((".dist-info", ".data")):
        return None
    names = [*parts[:-1], parts[-1][:-3]]
    if names[-1] == "__init__":
        names = names[:-1]
    if not names or any(n in SKIP_PARTS or not n.isidentifier() for n in names):
        return None
    if not private and any(n.startswith("_") for n in names):
        return None
    return ".".join(names)


def _source_reader(files: dict[str, Path]) -> SourceOf:
    """A reader of the modules in `files` (dotted name → path): (source, is a package), each read once."""
    cache: dict[str, tuple[str, bool] | None] = {}

    def source_of(module: str) -> tuple[str, bool] | None:
        if module not in cache:
            path = files.get(module)
            text = _read(path) if path is not None else ""
            cache[module] = (text, path.name == "__init__.py") if path is not None and text else None
        return cache[module]

    return source_of


# --- the standard library ------------------------------------------------------------------------


def stdlib_documents() -> Iterator[tuple[Library, list[Document]]]:
    """Public standard-library modules with Python sources, one library each."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for name in sorted(sys.stdlib_module_names):
        if name.startswith("_") or name in STDLIB_SKIP:
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        url = f"https://docs.python.org/{version}/library/{name}.html"
        origin = Path(spec.origin)
        root = origin.parent.parent if origin.name == "__init__.py" else origin.parent
        files = [origin] if origin.name != "__init__.py" else sorted(origin.parent.rglob("*.py"))
        source_of = _source_reader(
            {dotted: path for path in files if (dotted := _module_name(path.relative_to(root).parts, private=True))}
        )
        documents = []
        for path in files[:MAX_MODULES]:
            module = _module_name(path.relative_to(root).parts)
            found = source_of(module) if module else None
            doc = (
                module_markdown(found[0], module, is_package=found[1], source_of=source_of) if found and module else ""
            )
            if doc:
                documents.append(Document(f"/python/{name}", module or name, doc, "markdown", url))
        if documents:
            summary = (documents[0].text.split("\n\n")[1] if "\n\n" in documents[0].text else "")[:300]
            yield Library(f"/python/{name}", name, summary, "stdlib", version, url), documents


# --- docstrings and signatures -------------------------------------------------------------------


def module_markdown(source: str, module: str, *, is_package: bool = False, source_of: SourceOf | None = None) -> str:
    """The public API of a module as Markdown: its docstring, then each public class (with its
    public methods) and function: signature and docstring; with `source_of`, also the classes and
    functions it re-exports from private modules, under the public name. Empty if there is nothing to say."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ""
    parts = [f"# Module `{module}`"]
    docstring = ast.get_docstring(tree)
    if docstring:
        parts.append(_fenced(docstring))
    found = bool(docstring)
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
            found = True
            parts.append(_definition_markdown(node, module))
    exported = reexports(tree, module, is_package=is_package, source_of=source_of) if source_of else []
    for item in exported:
        found = True
        parts.append(_definition_markdown(item.node, module, name=item.public, origin=item.defined_in))
    return "\n\n".join(parts) if found else ""


def _definition_markdown(node: Definition, module: str, *, name: str | None = None, origin: str | None = None) -> str:
    """A class or function of `module` (named `name` there, defined in `origin` when that differs)."""
    if isinstance(node, ast.ClassDef):
        return _class_markdown(node, module, name=name, origin=origin)
    text = _function_markdown(node, module, level=2, name=name)
    if origin:
        heading, _, rest = text.partition("\n\n")
        text = f"{heading}\n\nDefined in `{origin}`." + (f"\n\n{rest}" if rest else "")
    return text


def _class_markdown(node: ast.ClassDef, module: str, *, name: str | None = None, origin: str | None = None) -> str:
    bases = ", ".join(ast.unparse(base) for base in node.bases)
    name = name or node.name
    parts = [f"## class `{module}.{name}{f'({bases})' if bases else ''}`"]
    if origin:
        parts.append(f"Defined in `{origin}`.")
    docstring = ast.get_docstring(node)
    if docstring:
        parts.append(_fenced(docstring))
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
            not item.name.startswith("_") or item.name == "__init__"
        ):
            parts.append(_function_markdown(item, f"{module}.{name}", level=3))
    return "\n\n".join(parts)


def _function_markdown(
    node: ast.FunctionDef | ast.AsyncFunctionDef, owner: str, *, level: int, name: str | None = None
) -> str:
    prefix = "async " if isinstance(node, ast.AsyncFunctionDef) else ""
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    signature = f"{prefix}{owner}.{name or node.name}({ast.unparse(node.args)}){returns}"
    docstring = ast.get_docstring(node)
    heading = f"{'#' * level} `{signature}`"
    return f"{heading}\n\n{_fenced(docstring)}" if docstring else heading


def _fenced(docstring: str) -> str:
    """A docstring whose code fences are balanced: an unclosed ``` (a slip some docstrings have) would
    otherwise swallow every heading after it, and with them the sections of the rest of the module."""
    text = docstring.strip()
    fences = sum(1 for line in text.splitlines() if line.lstrip().startswith(("```", "~~~")))
    return f"{text}\n```" if fences % 2 else text


def _read(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
