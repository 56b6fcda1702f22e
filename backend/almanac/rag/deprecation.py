"""Which classes and functions their source marks as deprecated, and what to use instead, read with `ast`.

A deprecated API keeps its old, plain name (pydantic's `BaseModel.dict` and `json`, `parse_obj`, `validator`), so a
question's words match it as well as they match its replacement (`model_dump`) — often better. The local index marks
its heading (`chunking.DEPRECATED_MARK`) and opens its passage with the reason, so that the ranking puts the
replacement first (`chunking.is_deprecated_title`, `RankingConfig.deprecated_penalty`) and a reader who still gets
it sees what to call instead.

An API is deprecated when its source says so for the whole API, in one of the ways packages do:

- a decorator named `deprecated` (PEP 702's `warnings.deprecated`, `typing_extensions.deprecated`, SQLAlchemy's
  `util.deprecated("2.0", …)`, LangChain's `deprecated(since=…, alternative=…)`) or `deprecated_…`, not one that
  marks parameters (`deprecated_params`);
- a `warn(…)` call with a deprecation category (`DeprecationWarning`, `PendingDeprecationWarning`, pydantic's
  `PydanticDeprecatedSince20`) among the first statements of the function's body — not inside an `if`, which
  deprecates one way of calling it — or of a class's `__init__`;
- its docstring's first line, when it starts with "Deprecated" ("Deprecated alias of …"). A `.. deprecated::`
  directive is not enough: packages write it as often for one parameter or one way of calling (jsonschema's
  "Calling this function with a second schema argument is deprecated").
"""

from __future__ import annotations

import ast
import re

MAX_REASON_CHARS = 200
_LEADING_STATEMENTS = 4  # a deprecation warning comes first in the body, before the work
_FIRST_LINE = re.compile(r"^\W*deprecated\b", re.IGNORECASE)
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def deprecation(node: Definition) -> str | None:
    """The reason a class or function is deprecated, as its source gives it ("" when it gives none), or None when
    it is not (see the module docstring)."""
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        if _is_deprecating(_name(call.func if call else decorator)):
            return _reason(call) if call else ""
    body = node.body
    if isinstance(node, ast.ClassDef):
        init = next((item for item in body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None)
        body = init.body if init is not None else []
    for statement in _leading(body):
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and _warns(statement.value):
            return _reason(statement.value)
    return _documented(ast.get_docstring(node) or "")


def _is_deprecating(name: str) -> bool:
    return name == "deprecated" or (name.startswith("deprecated_") and "param" not in name)


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def _leading(body: list[ast.stmt]) -> list[ast.stmt]:
    """The first statements of a body, after its docstring."""
    start = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
    return body[start : start + _LEADING_STATEMENTS]


def _warns(call: ast.Call) -> bool:
    """Whether a call is `warn(…)`/`warnings.warn(…)` with a deprecation category."""
    if _name(call.func) != "warn":
        return False
    categories = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "category")]
    return any("Deprecat" in _name(category) for category in categories)


def _reason(call: ast.Call) -> str:
    """The longest text among a call's arguments (the message, not a version such as "2.0"), with an
    `alternative=` keyword said as such; "" when there is none."""
    texts = [_text(arg) for arg in call.args]
    texts += [_text(k.value) for k in call.keywords if k.arg in ("message", "reason", "msg", "details")]
    reason = max(texts, key=len, default="")
    alternative = next((_text(k.value) for k in call.keywords if k.arg in ("alternative", "replacement")), "")
    if alternative:
        reason = f"{reason} Use `{alternative}` instead.".strip()
    return _bounded(reason)


def _text(node: ast.expr) -> str:
    """A string argument's text; an f-string's literal parts around `…`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else "…"
            for part in node.values
        )
    return ""


def _documented(docstring: str) -> str | None:
    first = docstring.strip().split("\n", 1)[0]
    return _bounded(first) if _FIRST_LINE.match(first) else None


def _bounded(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1].rstrip() + "…"
