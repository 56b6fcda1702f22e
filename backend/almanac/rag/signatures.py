"""Signatures as a reader wants them: parameters documented in their annotations moved out of the signature.

FastAPI (and other libraries following PEP 727's `Doc`) documents each parameter inside its type:
`Header(default: Annotated[Any, Doc("Default value if the parameter field is not set.")] = Undefined, …)`.
Printed as written, one function's signature runs to thousands of characters, so its passage is the
signature cut into pieces, with the function's name far from most of them and its parameters' documentation
buried in string escapes. `split_documented` takes such annotations apart: the signature keeps each such
parameter's name and default (`default=Undefined`), and each becomes a line of the passage's text with its
plain type and its documentation (`` - `default: Any`: Default value if… ``).

A class's fields are documented the same way when the source documents them with a string after the
attribute (`frozen: bool`, then a string saying "Whether models are faux-immutable…", as pydantic's `ConfigDict` and
many settings and dataclass-style classes do): `documented_attributes` lists them, so "make a model
immutable" finds the `frozen` option among `ConfigDict`'s fifty. Read with `ast`; nothing is imported.
"""

from __future__ import annotations

import ast
import copy
import inspect
from dataclasses import dataclass

MAX_ITEM_CHARS = 400


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str
    kind: str  # its type as written, without the documentation
    doc: str


def split_documented(args: ast.arguments) -> tuple[ast.arguments, list[Parameter]]:
    """The arguments without every `Annotated[T, …, Doc("…")]` annotation (a copy: the tree's own
    node stays as parsed), and the documentation those annotations carried, in the signature's order.
    Arguments without such annotations come back as they are, with no parameters."""
    documented: list[Parameter] = []
    plain = copy.deepcopy(args)
    every = [*plain.posonlyargs, *plain.args, *filter(None, [plain.vararg]), *plain.kwonlyargs]
    every += [plain.kwarg] if plain.kwarg is not None else []
    for arg in every:
        if arg.annotation is None:
            continue
        found = _documented_type(arg.annotation)
        if found is not None:
            kind, doc = found
            arg.annotation = None  # the type goes with the documentation, below: the signature stays short
            documented.append(Parameter(arg.arg, ast.unparse(kind), doc))
    return (plain, documented) if documented else (args, [])


def parameters_markdown(parameters: list[Parameter]) -> str:
    """The parameters' (or attributes') documentation as a Markdown list, one line each (empty for none): the
    first paragraph of each, at most `MAX_ITEM_CHARS` (pydantic documents a `ConfigDict` option with pages of
    examples; the summary says what it is for)."""
    return "\n".join(f"- `{p.name}{f': {p.kind}' if p.kind else ''}`: {_summary(p.doc)}" for p in parameters)


def _summary(doc: str) -> str:
    first = " ".join(doc.strip().split("\n\n", 1)[0].split())
    return first if len(first) <= MAX_ITEM_CHARS else first[: MAX_ITEM_CHARS - 1].rstrip() + "…"


def _documented_type(annotation: ast.expr) -> tuple[ast.expr, str] | None:
    """(the plain type, the documentation) of `Annotated[T, …, Doc("…")]`, however `Annotated` and `Doc` are
    imported (`typing.Annotated`, `typing_extensions.Doc`, `annotated_doc.Doc`); None for any other annotation."""
    if not isinstance(annotation, ast.Subscript) or _last_name(annotation.value) != "Annotated":
        return None
    inner = annotation.slice
    if not isinstance(inner, ast.Tuple) or len(inner.elts) < 2:
        return None
    kind, *metadata = inner.elts
    for item in metadata:
        if (
            isinstance(item, ast.Call)
            and _last_name(item.func) == "Doc"
            and len(item.args) == 1
            and isinstance(item.args[0], ast.Constant)
            and isinstance(item.args[0].value, str)
        ):
            rest = [m for m in metadata if m is not item]
            plain = kind if not rest else ast.Subscript(annotation.value, ast.Tuple([kind, *rest], ast.Load()))
            return plain, inspect.cleandoc(item.args[0].value)
    return None


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def documented_attributes(node: ast.ClassDef) -> list[Parameter]:
    """A class's public attributes that a string right after their assignment documents (`name: T = …` or
    `name = …`, then a string on its own), in source order, with their annotation (empty when there is none)."""
    found: list[Parameter] = []
    for before, after in zip(node.body, node.body[1:], strict=False):
        if not (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)):
            continue
        if not isinstance(after.value.value, str):
            continue
        if isinstance(before, ast.AnnAssign) and isinstance(before.target, ast.Name):
            name, kind = before.target.id, ast.unparse(before.annotation)
        elif isinstance(before, ast.Assign) and len(before.targets) == 1 and isinstance(before.targets[0], ast.Name):
            name, kind = before.targets[0].id, ""
        else:
            continue
        if not name.startswith("_"):
            found.append(Parameter(name, kind, inspect.cleandoc(after.value.value)))
    return found
