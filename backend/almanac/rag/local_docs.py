"""Collect the local documentation: Markdown / reStructuredText / text files under configured
folders, the documentation of installed Python distributions (the README in their metadata, and
the docstrings and signatures of their public modules, read with `ast` — never imported), and,
optionally, the standard library's modules the same way. A public module's page also documents the
classes and functions it re-exports from private modules, under their public names (`reexports.py`).
What source cannot show — modules in C, builtins, names made at run time, re-exports from other
packages — `with_introspection` adds from `introspect.py` (imports in a separate, isolated process).
Helpers are marked internal in their headings (`module_api`), so chunks know what is public API."""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.metadata as metadata
import importlib.util
import logging
import os
import re
import sys
import sysconfig
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from email.message import Message
from pathlib import Path
from typing import cast

from almanac.rag.chunking import (
    ANOTHER_NAME_FOR,
    DEFINED_IN,
    DEPRECATED_MARK,
    EXPORTED_AS,
    INHERITED_FROM,
    INTERNAL_MARK,
    Format,
    open_fence,
    without_headings,
)
from almanac.rag.deprecation import deprecation
from almanac.rag.introspect import DEFAULT_TIMEOUT_S, Entry, Request, introspect
from almanac.rag.popularity import usage
from almanac.rag.reexports import (
    Definition,
    SourceOf,
    aliases,
    computed_all,
    definitions,
    literal_all,
    public_names,
    reexports,
    unresolved_exports,
)
from almanac.rag.signatures import Parameter, documented_attributes, parameters_markdown, split_documented

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
    # `os.path` under other names: its shared part, which `os.path` re-exports (`genericpath`), the other platform's
    # (`ntpath` here, `posixpath` on Windows) and Windows' file URLs (`nturl2path`); documented as `os.path`, or no
    # API of this platform ("the modified time of a file" found `genericpath.getmtime` before `os.path.getmtime`)
    "genericpath",
    "nturl2path",
    "ntpath" if os.path.__name__ == "posixpath" else "posixpath",
}
# Standard-library modules users import under another name: `os.path` is `posixpath` (`ntpath` on Windows); their
# passages are titled, searched and linked under the name code uses.
STDLIB_ALIASES = {os.path.__name__: "os.path"}
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
    introspect: Request | None = None  # what to ask introspection about this module (None: nothing)
    documented: frozenset[str] = frozenset()  # the names `ast` documented (introspection only fills gaps)
    uses: frozenset[str] = frozenset()  # the qualified names its code uses (`popularity.usage`)
    contexts: Mapping[str, frozenset[str]] = field(default_factory=dict)  # the words around those uses


README = " README"  # the end of the title of a distribution's README document
# The sections of a README about the project rather than its use: how to contribute, the licence, who wrote and funds
# it, its history. An answer to "send a message with the anthropic SDK" has no use for its "Contributing" section.
_HOUSEKEEPING = re.compile(
    # words that say it whatever follows them ("Contributing to Click", "License and copyright")…
    r"(?:how to )?(?:contribut\w*|licen[cs]\w*|change ?log|release notes|code of conduct|acknowledge?ments?|sponsor\w*|"
    r"donat\w*|citation|citing|how to cite|maintainers?)\b"
    # …and words that say it alone ("History", not "History of a key"; "Support", not "Support for HTTP/2")
    r"|(?:changes|history|release history|security(?: policy)?|authors?|credits|backers|funding|"
    r"support(?: the project)?|community|thanks)\W*$",
    re.I,
)


def housekeeping(title: str) -> bool:
    """Whether a README passage's title (its heading path) lies in a section about the project rather than its use
    (`_HOUSEKEEPING`: "Contributing", "License", "Code of Conduct > Our Pledge"); the README's own title, its first
    heading, is the project's name and never counts."""
    headings = [re.sub(r"^[\W\d_]+", "", heading).strip() for heading in title.split(" > ")[1:]]
    return any(_HOUSEKEEPING.match(heading) for heading in headings)


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


def distribution_documents(
    names: Iterable[str] | None = None, *, path: Sequence[Path] | None = None
) -> Iterator[tuple[Library, list[Document]]]:
    """Each installed distribution (or only those named; on `path` instead of `sys.path` when given) as a
    library with its documents."""
    wanted = {normalise(n) for n in names} if names is not None else None
    seen: set[str] = set()
    dists = metadata.distributions(path=[str(p) for p in path]) if path is not None else metadata.distributions()
    for dist in sorted(dists, key=lambda d: normalise(_meta(d).get("Name") or "")):
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
            documents.append(Document(library.id, f"{name}{README}", readme, fmt, url))
        modules = 0
        files = {
            dotted: Path(str(dist.locate_file(file)))
            for file in dist.files or ()
            if (dotted := _module_name(file.parts, private=True))
        }
        source_of = _source_reader(files)
        ordered = fair_order(public for file in dist.files or () if (public := _module_name(file.parts)))
        imported_as = public_names(ordered, source_of)  # `fastapi.applications.FastAPI` → `fastapi.FastAPI`
        for module in ordered:
            if modules >= MAX_MODULES:
                break
            found = source_of(module)
            api = (
                module_api(found[0], module, is_package=found[1], source_of=source_of, public=imported_as)
                if found
                else None
            )
            if api is not None and (api.markdown or api.request):
                modules += 1
                documents.append(api.document(library.id, url))
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


def fair_order(modules: Iterable[str]) -> list[str]:
    """Dotted module names in the order a capped index takes them: shallow modules first within each
    subpackage, the subpackages taking turns — so that one subpackage of thousands of generated modules
    (`anthropic.types`: 2,900 files) cannot fill the cap before a small one users call
    (`anthropic.resources.messages`). A top-level module is a turn of its own."""
    groups: dict[str, list[str]] = {}
    for module in modules:
        parts = module.split(".")
        groups.setdefault(".".join(parts[:2]) if len(parts) > 2 else module, []).append(module)
    ranked = []
    for group in groups.values():
        group.sort(key=lambda m: (m.count("."), m))
        ranked += [(turn, m.count("."), m) for turn, m in enumerate(group)]
    return [m for _, _, m in sorted(ranked)]


def _module_name(parts: tuple[str, ...], *, private: bool = False) -> str | None:
    """The dotted module name of a file path inside site-packages; None for non-modules, tests and
    vendored code, and (unless `private`) for private modules. A package's own `testing` module is its API for
    testing code that uses it (`numpy.testing.assert_allclose`, `click.testing.CliRunner`), not its test suite:
    documented, though not what lies beneath it."""
    if not parts or not parts[-1].endswith(".py") or ".." in parts or parts[0].endswith((".dist-info", ".data")):
        return None
    names = [*parts[:-1], parts[-1][:-3]]
    if names[-1] == "__init__":
        names = names[:-1]
    public_testing = len(names) == 2 and names[1] == "testing"  # `numpy.testing`, `click.testing`: API to test with
    if not names or any((n in SKIP_PARTS and not public_testing) or not n.isidentifier() for n in names):
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


def stdlib_documents(names: Iterable[str] | None = None) -> Iterator[tuple[Library, list[Document]]]:
    """Public standard-library modules (or only those named), one library each: those with Python sources
    read with `ast`, the others (built in, or extension modules) left to introspection."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    wanted = set(names) if names is not None else None
    for name in sorted(sys.stdlib_module_names):
        if name.startswith("_") or name in STDLIB_SKIP or (wanted is not None and name not in wanted):
            continue
        spec = stdlib_spec(name)
        if spec is None or not spec.origin:
            continue
        public = STDLIB_ALIASES.get(name, name)
        url = f"https://docs.python.org/{version}/library/{public}.html"
        if not spec.origin.endswith(".py"):  # built in, or an extension module: only introspection sees it
            yield (
                Library(f"/python/{public}", public, "", "stdlib", version, url),
                [Document(f"/python/{public}", public, "", "markdown", url, Request(public))],
            )
            continue
        origin = Path(spec.origin)
        root = origin.parent.parent if origin.name == "__init__.py" else origin.parent
        files = [origin] if origin.name != "__init__.py" else sorted(origin.parent.rglob("*.py"))
        source_of = _source_reader(
            {dotted: path for path in files if (dotted := _module_name(path.relative_to(root).parts, private=True))}
        )
        documents = []
        modules = [module for path in files if (module := _module_name(path.relative_to(root).parts))]
        imported_as = public_names(modules, source_of)  # `asyncio.tasks.gather` → `asyncio.gather`
        for path in files[:MAX_MODULES]:
            module = _module_name(path.relative_to(root).parts)
            found = source_of(module) if module else None
            titled = public if module == name else module
            api = (
                module_api(found[0], titled, is_package=found[1], source_of=source_of, public=imported_as)
                if found and titled
                else None
            )
            if api is not None and (api.markdown or api.request):
                documents.append(api.document(f"/python/{public}", url))
        if documents:
            library = Library(f"/python/{public}", public, _summary(documents[0].text), "stdlib", version, url)
            yield library, documents


def stdlib_spec(name: str) -> importlib.machinery.ModuleSpec | None:
    """Where the standard-library module `name` is: built in, frozen, or a file in the interpreter's own library
    directories — never a file of the same name that the working directory or a path entry puts first (a project's
    `trace.py` or `secrets.py` would be documented, and shown to users, as the standard library's)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.has_location or not spec.origin:
        return spec  # built in or frozen: the interpreter's own
    stdlib = [sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")]
    folders = [*dict.fromkeys(stdlib), os.path.join(sysconfig.get_path("platstdlib"), "lib-dynload")]
    origin = Path(spec.origin).resolve()
    if any(origin.is_relative_to(Path(folder).resolve()) for folder in folders):
        return spec
    return importlib.machinery.PathFinder.find_spec(name, folders)


def _summary(text: str) -> str:
    """A library's description: the first paragraph after its first module's heading."""
    return (text.split("\n\n")[1] if "\n\n" in text else "")[:300]


# --- introspection -------------------------------------------------------------------------------


def with_introspection(
    libraries: list[Library],
    documents: list[Document],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    extra_path: Sequence[Path] = (),
) -> tuple[list[Library], list[Document]]:
    """The documents completed with what introspection sees (`introspect.py`, in a subprocess): each
    document asking for it gets the public classes and functions `ast` did not document appended;
    modules only introspection sees get a document of their own. No duplicates: the `ast` passage wins
    where both see a name — in the module itself, or where its own package defines it (`asyncio.wait_for`
    stays `asyncio.tasks.wait_for`) — and an object its package exposes in several modules is documented
    once, under the shortest module name (`numpy.ndarray`, not `numpy.core.numeric.ndarray`). A name
    re-exported from another package is documented under the re-exporting name too (that is the point).
    Libraries and documents left empty are dropped; a library without a description gets its first
    module's docstring."""
    requests = list({d.introspect.module: d.introspect for d in documents if d.introspect is not None}.values())
    found = introspect(requests, timeout_s=timeout_s, extra_path=extra_path)[0] if requests else {}
    by_ast = {(document.title, name) for document in documents for name in document.documented}
    home: dict[tuple[str, str], str] = {}  # (owner, name) of an object of the same package → where documented
    for module, described in sorted(found.items(), key=lambda item: (item[0].count("."), item[0])):
        for entry in described.entries:
            if _same_package(entry.owner, module):
                home.setdefault((entry.owner, entry.name), module)

    def wanted(entry: Entry, module: str, document: Document) -> bool:
        if entry.name in document.documented:
            return False
        if not _same_package(entry.owner, module):
            return True
        key = (entry.owner, entry.name)
        return key not in by_ast and home.get(key) == module

    completed = []
    for document in documents:
        text = document.text
        info = found.get(document.introspect.module) if document.introspect is not None else None
        if info is not None:
            entries = [entry for entry in info.entries if wanted(entry, document.title, document)]
            text = introspected_markdown(document.title, info.doc, entries, text)
        if text:
            completed.append(replace(document, text=text, introspect=None))
    firsts: dict[str, Document] = {}
    for document in completed:
        firsts.setdefault(document.library_id, document)
    kept = [
        library
        if library.description or library.id not in firsts
        else replace(library, description=_summary(firsts[library.id].text))
        for library in libraries
        if library.id in firsts or library.kind == "folder"
    ]
    return kept, completed


def _same_package(owner: str, module: str) -> bool:
    """Whether `owner` belongs to `module`'s package (its C accelerator `_hashlib` to `hashlib` included)."""
    return owner.split(".")[0].lstrip("_") == module.split(".")[0].lstrip("_")


def introspected_markdown(module: str, doc: str, entries: Iterable[Entry], existing: str = "") -> str:
    """`existing` (the `ast` Markdown of `module`, or nothing) followed by introspected `entries`, in the
    same form; builtins are named as users write them (`str.split`, `isinstance`)."""
    parts = [existing] if existing else [f"# Module `{module}`", *([_fenced(doc)] if doc.strip() else [])]
    added = False
    for entry in entries:
        added = True
        qualified = entry.name if module == "builtins" else f"{module}.{entry.name}"
        signature = entry.signature if entry.signature is not None else ("" if entry.kind == "class" else "(...)")
        heading = f"## class `{qualified}{signature}`" if entry.kind == "class" else f"## `{qualified}{signature}`"
        parts.append(heading)
        if entry.owner not in (module, "builtins"):
            parts.append(DEFINED_IN.format(entry.owner))
        if entry.doc.strip():
            parts.append(_fenced(entry.doc))
        for member in entry.methods:
            parts.append(f"### `{qualified}.{member.name}{member.signature or '(...)'}`")
            if member.doc.strip():
                parts.append(_fenced(member.doc))
    return "\n\n".join(parts) if added or existing or doc.strip() else ""


# --- docstrings and signatures -------------------------------------------------------------------


@dataclass(frozen=True)
class ModuleApi:
    """What `ast` sees of a module: its Markdown, the names documented there, and what is left for
    introspection to fill in (None: nothing)."""

    module: str
    markdown: str
    documented: frozenset[str]
    request: Request | None
    uses: frozenset[str] = frozenset()  # the qualified names the module's code uses
    contexts: Mapping[str, frozenset[str]] = field(default_factory=dict)  # the words around those uses

    def document(self, library_id: str, url: str | None) -> Document:
        return Document(
            library_id,
            self.module,
            self.markdown,
            "markdown",
            url,
            self.request,
            self.documented,
            self.uses,
            self.contexts,
        )


def module_markdown(source: str, module: str, *, is_package: bool = False, source_of: SourceOf | None = None) -> str:
    """The public API of a module as Markdown (see `module_api`)."""
    return module_api(source, module, is_package=is_package, source_of=source_of).markdown


def module_api(
    source: str,
    module: str,
    *,
    is_package: bool = False,
    source_of: SourceOf | None = None,
    public: Mapping[str, str] | None = None,
) -> ModuleApi:
    """The public API of a module as Markdown: its docstring, then each public class (with its public
    methods) and function: signature and docstring, and the name users import it by when its package
    re-exports it higher up (`public`, from `reexports.public_names`); with `source_of`, also the classes and
    functions it re-exports from private modules, under the public name. The Markdown is empty if there is nothing to
    say. Helpers are marked internal (`INTERNAL_MARK`): with a literal `__all__`, what it leaves out;
    without one, classes that only the module's other classes instantiate (Starlette's `GZipResponder`
    behind `GZipMiddleware`). Names it exports that are not documented here are left to introspection.
    Also the names its code uses and the words around those uses (`popularity.usage`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):  # RecursionError: nested too deep for ast
        return ModuleApi(module, "", frozenset(), None)
    parts = [f"# Module `{module}`"]
    docstring = ast.get_docstring(tree)
    if docstring:
        parts.append(_fenced(docstring))
    found = bool(docstring)
    exported = None if computed_all(tree) else literal_all(tree)  # a computed __all__ marks nothing internal
    helpers = _instantiated_by_other_classes(tree) if exported is None else set()
    defined = definitions(tree.body)
    classes = {node.name: node for node in defined if isinstance(node, ast.ClassDef)}
    documented: set[str] = set()
    for node in defined:
        if not node.name.startswith("_"):
            found = True
            documented.add(node.name)
            internal = node.name in helpers or (exported is not None and node.name not in exported)
            imported = (public or {}).get(f"{module}.{node.name}")
            parts.append(_definition_markdown(node, module, internal=internal, classes=classes, imported_as=imported))
    for alias, function in aliases(tree.body):
        found = True
        documented.add(alias)
        internal = exported is not None and alias not in exported
        parts.append(_alias_markdown(function, module, alias, level=2, internal=internal))
    reexported = reexports(tree, module, is_package=is_package, source_of=source_of) if source_of else []
    for item in reexported:
        found = True
        documented.add(item.public)
        parts.append(_definition_markdown(item.node, module, name=item.public, origin=item.defined_in))
    gaps = unresolved_exports(tree, module, is_package=is_package, documented=documented, source_of=source_of)
    request = Request(module, gaps) if gaps is None or gaps else None
    markdown = "\n\n".join(parts) if found else ""
    return ModuleApi(module, markdown, frozenset(documented), request, *usage(tree, source))


def _instantiated_by_other_classes(tree: ast.Module) -> set[str]:
    """The module's public classes that another of its classes instantiates in a method: its helpers."""
    classes = {
        node.name: node
        for node in definitions(tree.body)
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
    }
    used: set[str] = set()
    if len(classes) < 2:
        return used
    for name, node in classes.items():
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in classes:
                if inner.func.id != name:
                    used.add(inner.func.id)
    return used


def _definition_markdown(
    node: Definition,
    module: str,
    *,
    name: str | None = None,
    origin: str | None = None,
    internal: bool = False,
    classes: Mapping[str, ast.ClassDef] | None = None,
    imported_as: str | None = None,
) -> str:
    """A class or function of `module` (named `name` there, defined in `origin` when that differs; `classes`:
    the classes of the module defining it, by name; `imported_as`: the public name users import it by)."""
    if isinstance(node, ast.ClassDef):
        text = _class_markdown(node, module, name=name, origin=origin, internal=internal, classes=classes)
    else:
        text = _function_markdown(node, module, level=2, name=name, internal=internal)
    notes = [DEFINED_IN.format(origin)] if origin and not isinstance(node, ast.ClassDef) else []
    notes += [EXPORTED_AS.format(imported_as)] if imported_as else []
    if notes:  # below the heading and any deprecation (the passage opens with the reason), as a class's own
        heading, _, rest = text.partition("\n\n")
        first, _, after = rest.partition("\n\n")
        lead = [first] if first.startswith(_deprecated("")) else []
        text = "\n\n".join([heading, *lead, *notes, *filter(None, [after if lead else rest])])
    return text


def _class_markdown(
    node: ast.ClassDef,
    module: str,
    *,
    name: str | None = None,
    origin: str | None = None,
    internal: bool = False,
    classes: Mapping[str, ast.ClassDef] | None = None,
) -> str:
    bases = ", ".join(ast.unparse(base) for base in node.bases)
    name = name or node.name
    reason = deprecation(node)
    heading = f"## class `{module}.{name}{f'({bases})' if bases else ''}`"
    parts = [heading + _marks(deprecated=reason is not None, internal=internal)]
    if reason is not None:
        parts.append(_deprecated(reason))
    if origin:
        parts.append(DEFINED_IN.format(origin))
    docstring = ast.get_docstring(node)
    if docstring:
        parts.append(_fenced(docstring))
    attributes = documented_attributes(node)  # pydantic's `ConfigDict` documents its fifty options this way
    if attributes:
        parts.append(parameters_markdown(attributes))
    own = set()
    for item in definitions(node.body):
        own.add(item.name)
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
            not item.name.startswith("_") or item.name == "__init__"
        ):
            text = _function_markdown(item, f"{module}.{name}", level=3)
            if "\n" not in text and classes and (found := inherited(node, item.name, classes)) is not None:
                base, docstring = found
                source = f"`{module}.{base}.{item.name}`"
                text += f"\n\n{_fenced(docstring)}\n\n(The documentation of {source}, which it overrides.)"
            parts.append(text)
    for base, item in from_private_bases(node, classes or {}, own):
        text = _function_markdown(item, f"{module}.{name}", level=3)
        parts.append(f"{text}\n\n{INHERITED_FROM.format(f'{module}.{base}')}")
    parts += [_alias_markdown(item, f"{module}.{name}", alias, level=3) for alias, item in aliases(node.body)]
    return "\n\n".join(parts)


def _alias_markdown(
    node: ast.FunctionDef | ast.AsyncFunctionDef, owner: str, alias: str, *, level: int, internal: bool = False
) -> str:
    """An alias of a function (`incr = incrby`) documented under its own name: the summary of that function's
    docstring, then a line naming what it is another name for — not all of the docstring again, which would make
    the two a pair of near-copies that the ranking's diversity step keeps only one of."""
    heading = _function_markdown(node, owner, level=level, name=alias, internal=internal).partition("\n\n")[0]
    summary = (ast.get_docstring(node) or "").split("\n\n", 1)[0].strip()
    return "\n\n".join(
        [heading, *([_fenced(summary)] if summary else []), ANOTHER_NAME_FOR.format(f"{owner}.{node.name}")]
    )


def from_private_bases(
    node: ast.ClassDef, classes: Mapping[str, ast.ClassDef], own: set[str]
) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The public methods a class inherits from private base classes of its module (`classes`), with the base
    defining each: no one reads a `_Base`'s documentation, so its methods are the class's own to its users
    (`argparse.ArgumentParser.add_argument` is defined on `argparse._ActionsContainer`). A method the class or
    a nearer base defines (`own` holds the class's names) is not inherited; a public base's methods are
    documented under it."""
    seen = set(own)
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for base in _bases(node, classes, through=lambda name: name.startswith("_")):
        names = definitions(base.body)
        if base.name.startswith("_"):
            found += [
                (base.name, item)
                for item in names
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                and not item.name.startswith("_")
                and item.name not in seen
            ]
        seen.update(item.name for item in names)
    return found


def _bases(
    node: ast.ClassDef, classes: Mapping[str, ast.ClassDef], *, through: Callable[[str], bool] = lambda name: True
) -> Iterator[ast.ClassDef]:
    """A class's base classes defined in its module (`classes`), nearest first (breadth first, each once); the
    bases of a base are followed only when `through` accepts its name."""
    seen: set[str] = {node.name}
    queue = [base.id for base in node.bases if isinstance(base, ast.Name)]
    while queue:
        name = queue.pop(0)
        if name in seen or name not in classes:
            continue
        seen.add(name)
        base = classes[name]
        yield base
        if through(name):
            queue += [b.id for b in base.bases if isinstance(b, ast.Name)]


def inherited(node: ast.ClassDef, method: str, classes: Mapping[str, ast.ClassDef]) -> tuple[str, str] | None:
    """The documentation an undocumented method inherits, as `inspect.getdoc` finds it: (the base class, its
    docstring) of the nearest base class in the same module (`classes`) that documents a method of that name
    (Click's `Group.invoke` overrides the documented `Command.invoke`); None when none does."""
    for base in _bases(node, classes):
        for item in definitions(base.body):
            if item.name == method and isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                docstring = ast.get_docstring(item)
                if docstring:
                    return base.name, docstring
    return None


def _function_markdown(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    owner: str,
    *,
    level: int,
    name: str | None = None,
    internal: bool = False,
) -> str:
    docstring = ast.get_docstring(node)
    parameters: list[Parameter] = []
    if is_property(node):  # read as an attribute: `path.suffix`, never `path.suffix()`
        kind = f": {ast.unparse(node.returns)}" if node.returns else ""
        heading = f"{'#' * level} property `{owner}.{name or node.name}{kind}`"
    else:
        prefix = "async " if isinstance(node, ast.AsyncFunctionDef) else ""
        returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        args, parameters = split_documented(node.args)  # FastAPI's `Annotated[T, Doc("…")]`: T, and a list below
        heading = f"{'#' * level} `{prefix}{owner}.{name or node.name}({ast.unparse(args)}){returns}`"
    reason = deprecation(node)
    heading += _marks(deprecated=reason is not None, internal=internal)
    body = [_deprecated(reason)] if reason is not None else []
    body += [_fenced(docstring)] if docstring else []
    if parameters:
        body.append(parameters_markdown(parameters))
    return "\n\n".join([heading, *body])


def _marks(*, deprecated: bool, internal: bool) -> str:
    """What a heading says of its API after its name: deprecated (`deprecation.py`), internal (the last mark)."""
    return (f" {DEPRECATED_MARK}" if deprecated else "") + (f" {INTERNAL_MARK}" if internal else "")


def _deprecated(reason: str) -> str:
    return f"**Deprecated.** {reason}".rstrip()


def is_property(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a method is read as an attribute: decorated `@property` or `@cached_property` (`functools.`'s
    or a package's own)."""
    names = {
        d.id if isinstance(d, ast.Name) else d.attr
        for d in node.decorator_list
        if isinstance(d, ast.Name | ast.Attribute)
    }
    return bool(names & {"property", "cached_property"})


def _fenced(docstring: str) -> str:
    """A docstring as the text of its API's section: its code fences closed — an unclosed ``` (a slip some
    docstrings have), or a reST heading underlined with `~~~` (`ast`'s), would otherwise open a code block that
    swallows every heading after it, and with them the sections of the rest of the module — and its own
    Markdown headings (`## Example` in FastAPI's) made bold, so that they do not end the API's section."""
    text = without_headings(docstring.strip())
    fence = open_fence(text)
    return f"{text}\n{fence}" if fence else text


def _read(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
