"""The public API a module re-exports from private modules: `httpx.AsyncClient` is defined in
`httpx._client` and reaches users through `from ._client import *` plus `__all__` in `httpx/__init__.py`;
`anthropic.Anthropic` through `from ._client import Anthropic`. The local index documents such names under
their public name, from the module that defines them.

What counts as re-exported: the names in the module's literal `__all__`; a package `__init__` without one
also re-exports every public name it imports explicitly, and any other module without one the names it
imports in the explicit re-export form `from m import X as X` (PEP 484's convention: SQLAlchemy's
`sqlalchemy.sql.expression` re-exports `select` and `text` from `._selectable_constructors` and
`._elements_constructors` that way). Only names that come from a private module
(a dotted path with a part starting with `_`) of the same top-level package are followed — public modules
are indexed on their own — through at most a few further imports (`from .x import *` included), to a class
or function defined at the top level. Everything is read with `ast`; nothing is imported. What reading cannot
document — names from a module with no Python source (an extension module: `tokenizers.Tokenizer`,
`safetensors.safe_open`), bound by assignment, or in a computed `__all__` — is left to introspection
(`unresolved_exports`). A package's import from the standard library is a use, not a re-export.

The other way round, an API defined in a public module that its package re-exports higher up is documented where it
is written, with the name users import it by (`public_names`: `fastapi.applications.FastAPI` → `fastapi.FastAPI`).
"""

from __future__ import annotations

import ast
import copy
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

Definition = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
SourceOf = Callable[[str], tuple[str, bool] | None]  # dotted module name → (its source, whether a package)
MAX_HOPS = 4


def definitions(body: Sequence[ast.stmt]) -> list[Definition]:
    """The classes and functions a module or class body defines, each name once, in the order of first
    definition. A name defined again — the `@overload` declarations before their implementation, a property's
    setter after its getter — is one API: its first definition that is no `@overload` declaration (the
    implementation, the getter; the first declaration when there is nothing else), given the first docstring any
    of them has when it has none (the SDKs write an overloaded method's documentation on its `@overload`
    declarations: anthropic's `Messages.create`). Definitions in conditional blocks count too (`subprocess.Popen.kill`
    is defined under `if _mswindows: … else: …`, a pure-Python fallback under `except ImportError:`), those of an
    `if __name__ == "__main__":` block excepted (see `conditional`)."""
    named: dict[str, list[Definition]] = {}
    for node in conditional(body):
        if isinstance(node, Definition):
            named.setdefault(node.name, []).append(node)
    chosen: list[Definition] = []
    for nodes in named.values():
        node = next((n for n in nodes if not is_overload(n)), nodes[0])
        docstring = next((d for n in nodes if (d := ast.get_docstring(n, clean=False))), None)
        if docstring and not ast.get_docstring(node, clean=False):
            node = copy.copy(node)  # the tree's own node stays as parsed
            node.body = [ast.Expr(ast.Constant(docstring)), *node.body]
        chosen.append(node)
    return chosen


def aliases(body: Sequence[ast.stmt]) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The public names a module or class body binds to one of its own functions by plain assignment, each with
    that function, in source order: redis-py's `incr = incrby` makes `Redis.incr` an API as callable as any
    defined with `def` (its documentation is the function's). Names the body defines itself, or binds more than
    once, are left out: an alias is only what a single `name = function` says."""
    defined = definitions(body)
    functions = {node.name: node for node in defined if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
    bound: dict[str, list[ast.expr | None]] = {}
    for node in conditional(body):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            bound.setdefault(node.target.id, []).append(None)
    taken = {node.name for node in defined}
    found = []
    for name, values in bound.items():
        value = values[0] if len(values) == 1 else None
        if not name.startswith("_") and name not in taken and isinstance(value, ast.Name) and value.id in functions:
            found.append((name, functions[value.id]))
    return found


def conditional(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's or class's statements with those of its `if` and `try` blocks in their place, every branch in
    source order (a platform's branch, a fallback after `except ImportError:`, a version check's), nested blocks
    too; an `if __name__ == "__main__":` block is a script's, not the module's API, and is left out."""
    for node in body:
        if isinstance(node, ast.If):
            if not _is_main_check(node.test):
                yield from conditional(node.body)
                yield from conditional(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            yield from conditional(node.body)
            for handler in node.handlers:
                yield from conditional(handler.body)
            yield from conditional(node.orelse)
            yield from conditional(node.finalbody)
        else:
            yield node


def _is_main_check(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def is_overload(node: Definition) -> bool:
    """Whether a definition is a `typing.overload` declaration (`@overload`, `@typing.overload`, `@t.overload`)."""
    return any(
        (isinstance(d, ast.Name) and d.id == "overload") or (isinstance(d, ast.Attribute) and d.attr == "overload")
        for d in node.decorator_list
    )


@dataclass(frozen=True)
class Reexport:
    public: str  # the name users import: "AsyncClient"
    node: Definition  # its class or function definition
    defined_in: str  # the private module that defines it: "httpx._client"


def reexports(tree: ast.Module, module: str, *, is_package: bool, source_of: SourceOf) -> list[Reexport]:
    """The classes and functions `module` (parsed as `tree`) re-exports from private modules, in the
    order `__all__` (or the imports) name them, each once."""
    package = module if is_package else module.rpartition(".")[0]
    lazy = dict(lazy_imports(tree, package))
    imports = {**lazy, **dict(explicit_imports(tree, package))}
    stars = list(_star_imports(tree, package))
    exported = literal_all(tree)
    local = {node.name for node in definitions(tree.body)}
    if exported is None:
        exported = [name for name in imports if not name.startswith("_")] if is_package else as_themselves(tree)
        exported += [name for name in lazy if name not in exported]
    parsed = _Parsed(source_of)
    found: list[Reexport] = []
    seen: set[str] = set()
    for name in exported:
        if name in seen or name in local or name.startswith("_"):
            continue
        seen.add(name)
        origins = [imports[name]] if name in imports else [(star, name) for star in stars]
        for target, original in origins:
            if _private_within(target, module):
                definition = parsed.find(target, original, MAX_HOPS)
                if definition is not None:
                    found.append(Reexport(name, definition[0], definition[1]))
                    break
    return found


def public_names(modules: Iterable[str], source_of: SourceOf) -> dict[str, str]:
    """Where users import a package's classes and functions from when that is not where they are defined: the
    shortest public module that re-exports each (`fastapi.applications.FastAPI` → `fastapi.FastAPI`,
    `sqlalchemy.engine.create.create_engine` → `sqlalchemy.create_engine`, `aiohttp.web_app.Application` →
    `aiohttp.web.Application`, `asyncio.tasks.gather` → `asyncio.gather`), keyed by the defining module's dotted
    name. A re-exporting module is a package `__init__` or a module with a literal `__all__`; what it exports is
    read as `reexports` reads it (its `__all__`, else a package's explicit imports), plus the names of the
    literal `__all__` of each public module of the package it star-imports (`from .tasks import *`, also for type
    checkers only: pydantic's `__init__` loads `pydantic.main`'s names on first use). At the same depth the
    re-exporting module wins: `aiohttp.web` is the module users import, `aiohttp.web_app` where it is written.
    Modules are read in outline (`_Outlines`): a whole standard library's syntax trees kept at once would slow
    every later allocation down (the garbage collector walks them all)."""
    outlines = _Outlines(source_of)
    best: dict[str, str] = {}
    for module in modules:
        found = source_of(module)
        if found is None or any(part.startswith("_") for part in module.split(".")):
            continue
        top = module.split(".")[0]
        if not found[1] and not _may_re_export(found[0], top):
            continue
        try:
            tree = ast.parse(found[0])
        except (SyntaxError, ValueError, RecursionError):
            continue
        is_package = found[1]
        exported = None if computed_all(tree) else literal_all(tree)
        if not is_package and exported is None:
            continue
        package = module if is_package else module.rpartition(".")[0]
        imports = {**dict(lazy_imports(tree, package)), **dict(explicit_imports(tree, package))}
        names = list(imports) if exported is None else list(exported)
        origins = {name: imports[name] for name in names if name in imports}
        checked = [node for node in tree.body if isinstance(node, ast.If) and _type_checking(node.test)]
        stars = [*_star_imports(tree, package), *(s for b in checked for s in _star_imports(_body(b), package))]
        for star in stars if is_package else ():
            for name in outlines.exported(star):
                origins.setdefault(name, (star, name))
        for name, (target, original) in origins.items():
            if name.startswith("_") or target.split(".")[0] != top:
                continue
            origin = outlines.origin(target, original, MAX_HOPS)
            if origin is None or origin[0] == module or _private_within(origin[0], module):
                continue
            if origin[0].count(".") < module.count("."):
                continue  # defined nearer the top: its own module is the shorter name
            defined, public = ".".join(origin), f"{module}.{name}"
            if defined not in best or (public.count("."), public) < (best[defined].count("."), best[defined]):
                best[defined] = public
    return best


def _may_re_export(source: str, top: str) -> bool:
    """Whether a module that is no package might re-export names, judged from its text without parsing it: it
    declares `__all__`, imports from its own package, and its `__all__` (when a plain literal list) names something
    it does not define or assign itself at column 0 — most modules with `__all__` (each of openai's 1,500 type
    modules) only list what they define."""
    if "__all__" not in source or not re.search(rf"from +(\.|{top}\.)", source):
        return False
    declared = _ALL_LITERAL.search(source)
    if declared is None or "__all__ +=" in source or source.count("__all__ =") > 1:
        return True
    names = set(re.findall(r"[\"'](\w+)[\"']", declared[1]))
    return not names <= {"".join(found) for found in _COLUMN_ZERO_BINDING.findall(source)}


_ALL_LITERAL = re.compile(r"^__all__ *(?::[^=\n]*)?= *[\[(]([^\])]*)[\])]", re.MULTILINE)
# a name a module defines or assigns at column 0 (`class Message(`, `Role = Literal[...]`, `Alias: TypeAlias = ...`)
_COLUMN_ZERO_BINDING = re.compile(r"^(?:(?:async[ \t]+def|def|class)[ \t]+(\w+)|(\w+)[ \t]*(?::[^=\n]*)?=(?!=))", re.M)


def _body(block: ast.If) -> ast.Module:
    return ast.Module(body=block.body, type_ignores=[])


_COLUMN_ZERO_DEFINITION = re.compile(r"^(?:async[ \t]+def|def|class)[ \t]+(\w+)", re.MULTILINE)


@dataclass(frozen=True)
class _Outline:
    """What following an import through a module needs: the names it defines, imports and exports."""

    defined: frozenset[str]
    imports: dict[str, tuple[str, str]]
    stars: tuple[str, ...]
    exported: tuple[str, ...]


class _Outlines:
    """Modules read in outline, each parsed at most once and its syntax tree dropped; a name a module defines at
    column 0 (`class FastAPI(`) is found without parsing at all."""

    def __init__(self, source_of: SourceOf) -> None:
        self._source_of = source_of
        self._outlines: dict[str, _Outline | None] = {}
        self._column_zero: dict[str, frozenset[str]] = {}

    def outline(self, module: str) -> _Outline | None:
        if module not in self._outlines:
            found = self._source_of(module)
            try:
                tree = ast.parse(found[0]) if found else None
            except (SyntaxError, ValueError, RecursionError):
                tree = None
            package = module if found and found[1] else module.rpartition(".")[0]
            self._outlines[module] = (
                _Outline(
                    frozenset(node.name for node in definitions(tree.body)),
                    dict(explicit_imports(tree, package)),
                    tuple(_star_imports(tree, package)),
                    tuple(literal_all(tree) or ()),
                )
                if tree is not None
                else None
            )
        return self._outlines[module]

    def exported(self, module: str) -> tuple[str, ...]:
        """The names of the module's literal `__all__`."""
        found = self.outline(module)
        return found.exported if found is not None else ()

    def origin(self, module: str, name: str, hops: int) -> tuple[str, str] | None:
        """The module defining the top-level class or function `name` of `module`, and its name there, following
        its imports `hops` deep (as `_Parsed.find`)."""
        if module not in self._column_zero:
            found = self._source_of(module)
            self._column_zero[module] = frozenset(_COLUMN_ZERO_DEFINITION.findall(found[0]) if found else ())
        if name in self._column_zero[module]:
            return module, name
        outline = self.outline(module)
        if outline is None:
            return None
        if name in outline.defined:
            return module, name
        if hops == 0:
            return None
        targets = [outline.imports[name]] if name in outline.imports else [(star, name) for star in outline.stars]
        for target, original in targets:
            if target.split(".")[0] == module.split(".")[0]:
                defining = self.origin(target, original, hops - 1)
                if defining is not None:
                    return defining
        return None


class _Parsed:
    """Modules parsed on demand (each at most once)."""

    def __init__(self, source_of: SourceOf) -> None:
        self._source_of = source_of
        self._trees: dict[str, tuple[ast.Module, bool] | None] = {}

    def tree(self, module: str) -> tuple[ast.Module, bool] | None:
        """The module's syntax tree and whether it is a package, or None when it cannot be read."""
        if module not in self._trees:
            found = self._source_of(module)
            try:
                self._trees[module] = (ast.parse(found[0]), found[1]) if found and found[0] else None
            except (SyntaxError, ValueError, RecursionError):
                self._trees[module] = None
        return self._trees[module]

    def find(self, module: str, name: str, hops: int) -> tuple[Definition, str] | None:
        """The top-level class or function `name` of `module`, following its imports `hops` deep."""
        parsed = self.tree(module)
        if parsed is None:
            return None
        tree, is_package = parsed
        for node in definitions(tree.body):
            if node.name == name:
                return node, module
        if hops == 0:
            return None
        package = module if is_package else module.rpartition(".")[0]
        imports = dict(explicit_imports(tree, package))
        targets = [imports[name]] if name in imports else [(star, name) for star in _star_imports(tree, package)]
        for target, original in targets:
            if target.split(".")[0] == module.split(".")[0]:
                found = self.find(target, original, hops - 1)
                if found is not None:
                    return found
        return None


def _resolve(level: int, target: str | None, package: str) -> str | None:
    """The absolute module of `from <dots><target> import …` written in `package`."""
    if level == 0:
        return target
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, *([target] if target else [])]) or None


def explicit_imports(tree: ast.Module, package: str) -> Iterator[tuple[str, tuple[str, str]]]:
    """(bound name, (absolute module, original name)) for each top-level `from m import a [as b]`, those of an
    `if TYPE_CHECKING or …:` block included (`_top_level`)."""
    for node in _top_level(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(node.level, node.module, package)
            if target is None:
                continue
            for alias in node.names:
                if alias.name != "*":
                    yield alias.asname or alias.name, (target, alias.name)


def lazy_imports(tree: ast.Module, package: str) -> Iterator[tuple[str, tuple[str, str]]]:
    """(bound name, (absolute module, original name)) for each `from m import a [as b]` in a top-level
    `if TYPE_CHECKING:` block of a module that loads its names on first use (a module `__getattr__`, also
    one defined under `if not TYPE_CHECKING:`): the names it promises type checkers are the names it
    exports (`stripe.Customer`, from `stripe._customer`, reaches users only through `stripe.__getattr__`).
    Nothing for any other module, where such imports serve annotations only."""
    blocks = [node for node in tree.body if isinstance(node, ast.If)]
    lazy = any(
        isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
        for node in [*tree.body, *(inner for block in blocks for inner in [*block.body, *block.orelse])]
    )
    if not lazy:
        return
    for block in blocks:
        if _type_checking(block.test):
            yield from explicit_imports(ast.Module(body=block.body, type_ignores=[]), package)


def _top_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """The module's top-level statements, with those of an `if TYPE_CHECKING or …:` block in its place: anyio's
    `__init__` imports its whole API so (`if TYPE_CHECKING or not install_lazy_importer():`), for type checkers and
    at run time unless a lazy importer serves the same names instead; either way they are what the module exports.
    So too the statements a top-level `try:` runs (not its fallbacks): onnxruntime's `__init__` imports its
    compiled API in one (`try: from onnxruntime.capi._pybind_state import SessionOptions, …`)."""
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.Or):
            if any(_type_checking(value) for value in node.test.values):
                yield from node.body
                continue
        if isinstance(node, ast.Try):
            yield from node.body
            continue
        yield node


def _type_checking(test: ast.expr) -> bool:
    """Whether an `if` test is `TYPE_CHECKING` (or `typing.TYPE_CHECKING`)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def as_themselves(tree: ast.Module) -> list[str]:
    """The names a module imports in the explicit re-export form, `from m import X as X`, in order."""
    return [
        alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname == alias.name
    ]


def _star_imports(tree: ast.Module, package: str) -> Iterator[str]:
    """The absolute modules of each top-level `from m import *`."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            target = _resolve(node.level, node.module, package)
            if target is not None:
                yield target


def literal_all(tree: ast.Module) -> list[str] | None:
    """The names of a literal `__all__ = [...]` (plus `__all__ += [...]`), or None when there is none."""
    names: list[str] | None = None
    for node in tree.body:
        value: ast.expr | None = None
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            names, value = [], node.value
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
            value = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
            names, value = [], node.value
        if isinstance(value, ast.List | ast.Tuple):
            names = (names or []) + [
                e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
    return names


def _private_within(target: str, module: str) -> bool:
    """Whether `target` is a private module of `module`'s top-level package."""
    parts = target.split(".")
    return parts[0] == module.split(".")[0] and any(part.startswith("_") for part in parts[1:])


def unresolved_exports(
    tree: ast.Module, module: str, *, is_package: bool, documented: set[str], source_of: SourceOf | None = None
) -> tuple[str, ...] | None:
    """The public names `module` exports that reading its source did not document, for introspection to
    fill in (`introspect.py`): names in `__all__`, or, without one, names imported from another package
    in the explicit re-export form `from m import X as X` (in a package `__init__`, any public name it
    imports from another package). Names imported from the package's public modules are left out (they
    are documented where they are defined), unless that module (read through `source_of`) binds the name by
    an assignment — `load_pem_x509_certificate = rust_x509.load_pem_x509_certificate` in
    `cryptography.x509.base`, a compiled function that no `def` documents there or anywhere — or is a module of
    the package with no Python source to read (`from .tokenizers import Tokenizer`: `tokenizers.abi3.so`;
    `from ._safetensors_rust import safe_open`), whose names only importing can document: a package `__init__`
    without `__all__` exports those too. None when the exports are computed at run time — a `__all__` that is not
    a literal list, or a module `__getattr__` — so only introspection can tell."""
    top = module.split(".")[0]
    if computed_all(tree):
        return None
    package = module if is_package else module.rpartition(".")[0]
    imports = dict(explicit_imports(tree, package))
    parsed = _Parsed(source_of) if source_of is not None else None

    def compiled(origin: str) -> bool:  # a module of this package that has no source to read
        return source_of is not None and origin.split(".")[0] == top and source_of(origin) is None

    def _exported_from(origin: str, module: str) -> bool:  # without `__all__`: what a package's API includes
        origin_top = origin.split(".")[0]
        if origin_top != top:  # another package's; in an installed package, a standard-library import is a use
            return top in sys.stdlib_module_names or origin_top not in sys.stdlib_module_names  # (`enum.Enum`)
        return is_package and (compiled(origin) or _private_within(origin, module))

    exported = literal_all(tree)
    if exported is None:
        exported = list(imports) if is_package else as_themselves(tree)
        exported = [name for name in exported if name in imports and _exported_from(imports[name][0], module)]
    gaps = []
    for name in dict.fromkeys(exported):
        if name.startswith("_") or name in documented:
            continue
        origin = imports.get(name)
        if origin is not None and origin[0].split(".")[0] == top and not _private_within(origin[0], module):
            if parsed is None or not (compiled(origin[0]) or origin[1] in _assigned(parsed, origin[0])):
                continue  # from a public module of the same package: documented there
        gaps.append(name)
    return tuple(gaps)


def _assigned(parsed: _Parsed, module: str) -> set[str]:
    """The names a module binds by a plain top-level assignment (`name = other.attribute`)."""
    found = parsed.tree(module)
    if found is None:
        return set()
    return {
        target.id
        for node in found[0].body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def computed_all(tree: ast.Module) -> bool:
    """Whether the module's exports are only known at run time: a module `__getattr__`, a `__all__`
    imported from another module (`collections.abc`), assigned something other than a literal list, or changed
    anywhere but by a top-level literal (`__all__.extend(...)`, `__all__ += ...` inside an `if`: `os`, `numpy`),
    or, without a literal `__all__`, everything of a private top-level module imported (`from _decimal import *`:
    C, no source to read).
    Module-level statements only (those inside `if`/`try`/`with`/`for` included), not function bodies: cheap on
    every module."""
    pending: list[tuple[ast.stmt, bool]] = [(node, True) for node in tree.body]
    accelerated = False
    while pending:
        node, top_level = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if top_level and node.name == "__getattr__":
                return True
            continue
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign | ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            if not top_level or not isinstance(getattr(node, "value", None), ast.List | ast.Tuple):
                return True
        if isinstance(node, ast.ImportFrom) and any(alias.name == "__all__" for alias in node.names):
            return True  # `from _collections_abc import __all__` (`collections.abc`): another module's list
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").startswith("_")
            and any(alias.name == "*" for alias in node.names)
        ):
            accelerated = True  # `from _decimal import *` (`decimal`): everything a C accelerator module defines
        call = node.value if isinstance(node, ast.Expr) else None
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "__all__"
        ):
            return True  # __all__.extend(...), .append(...)
        for field in ("body", "orelse", "finalbody", "handlers"):
            for child in getattr(node, field, ()) or ():
                if isinstance(child, ast.ExceptHandler):
                    pending.extend((inner, False) for inner in child.body)
                elif isinstance(child, ast.stmt):
                    pending.append((child, False))
    return accelerated and literal_all(tree) is None  # with a literal `__all__`, that list names the exports
