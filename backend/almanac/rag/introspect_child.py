"""The child process of `introspect.py`: imports modules and describes what introspection sees of them.

Run as `python -I introspect_child.py`, never imported by the server (it only uses the standard library,
and `-I` keeps this folder — whose `select.py` would shadow the standard module — off `sys.path`). Reads one
JSON request per line on stdin, `{"module": name, "names": [..] | null}`, and answers each on stdout with
one JSON line, `{"module": name, "ok": bool, "doc": str, "entries": [...]}`, flushed at once so the parent can time
every module. Sockets are disabled before anything is imported, and whatever the imported code prints to
stdout goes to stderr instead, so it cannot garble the answers.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import socket
import sys
from typing import Any

MAX_ENTRIES = 600  # numpy exports 463 functions, ufuncs and classes
MAX_METHODS = 80
MAX_DOC_CHARS = 1500
_TYPING = frozenset({"typing", "typing_extensions", "types"})
# a default value whose repr names where it lives in memory (`<function loads at 0x7f…>`): the address differs in
# every process, so the same installed package would be documented differently by each build of the index
_ADDRESS = re.compile(r" (?:object )?at 0x[0-9A-Fa-f]+>")


def _no_network(*args: object, **kwargs: object) -> Any:
    raise OSError("network access is disabled while the documentation index introspects modules")


def _disable_network() -> None:
    socket.socket.connect = _no_network  # type: ignore[method-assign]
    socket.socket.connect_ex = _no_network  # type: ignore[method-assign]
    socket.create_connection = _no_network
    socket.getaddrinfo = _no_network


def _signature(obj: object) -> str | None:
    try:
        return _ADDRESS.sub(">", str(inspect.signature(obj)))  # type: ignore[arg-type]
    except (TypeError, ValueError, RecursionError):
        return None


def _doc(obj: object) -> str:
    try:
        return (inspect.getdoc(obj) or "")[:MAX_DOC_CHARS]
    except Exception:  # a broken __doc__ property must not lose the module
        return ""


def _is_function(obj: object) -> bool:
    """A routine, or an object called like one that documents itself: numpy's ufuncs (`numpy.sqrt`), pytest's
    `skip` and `xfail` — instances, which are neither functions nor classes."""
    if inspect.isroutine(obj):
        return True
    if inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj):
        return False
    if type(obj).__module__ in _TYPING:  # `List`, `Optional`, a union alias: typing's forms, imported everywhere
        return False
    try:  # a proxy's `__signature__` may raise anything: it is no API then, and the module's others still count
        return bool(_doc(obj)) and _signature(obj) is not None
    except Exception:
        return False


def _typing_form(obj: object, module_name: str) -> bool:
    """One of a typing module's own aliases and special forms, described for that module (`typing.Callable`,
    `typing.Dict`: instances, neither classes nor functions, and the API of `typing` itself) when it documents
    itself — not a type variable such as `AnyStr`, whose documentation is its class's."""
    if module_name not in _TYPING or inspect.isclass(obj) or type(obj).__module__ not in _TYPING:
        return False
    doc = _doc(obj)
    return bool(doc) and doc != _doc(type(obj))


def _methods(cls: type) -> list[dict[str, Any]]:
    found = []
    for name, value in list(vars(cls).items()):
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(value, classmethod | staticmethod):
            value = value.__func__
        if not inspect.isroutine(value):
            continue
        doc = _doc(value)
        if name == "__init__" and (not doc or doc.startswith("Initialize self.")):
            continue
        found.append({"name": name, "signature": _signature(value), "doc": doc})
        if len(found) >= MAX_METHODS:
            break
    return found


def _owner_ok(owner: str, module: str) -> bool:
    """Whether an object defined in `owner` belongs to `module`'s own API (without `__all__`): defined
    there, in a private C module (`_hashlib` for `hashlib`), or in a private module of the same package."""
    if owner == module or module == "builtins":  # every builtin is builtin, wherever defined (`open`: io)
        return True
    top, owner_top = module.split(".")[0], owner.split(".")[0]
    if owner_top.startswith("_") and "." not in owner:
        return True
    return owner_top == top and any(part.startswith("_") for part in owner.split(".")[1:])


def describe(module_name: str, names: list[str] | None) -> list[dict[str, Any]]:
    module = importlib.import_module(module_name)
    exported = getattr(module, "__all__", None)
    if names is None and isinstance(exported, list | tuple) and all(isinstance(n, str) for n in exported):
        names = list(exported)
    candidates = names if names is not None else sorted(n for n in vars(module) if not n.startswith("_"))
    entries: list[dict[str, Any]] = []
    for name in candidates:
        try:
            obj = getattr(module, name)
        except Exception:  # lazy attributes may fail to load
            continue
        form = _typing_form(obj, module_name)
        if not (inspect.isclass(obj) or form or _is_function(obj)):
            continue
        owner = getattr(obj, "__module__", None) or module_name
        if not isinstance(owner, str):
            owner = module_name
        if names is None and not _owner_ok(owner, module_name):
            continue
        entry: dict[str, Any] = {
            "name": name,
            "kind": "class" if inspect.isclass(obj) or form else "function",
            "owner": owner,
            "signature": None if form else _signature(obj),
            "doc": _doc(obj),
        }
        if inspect.isclass(obj) and not form:
            entry["methods"] = _methods(obj)
        entries.append(entry)
        if len(entries) >= MAX_ENTRIES:
            break
    return entries


def main() -> None:
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything the imported code prints goes to stderr, not into the answers
    sys.stdout = sys.stderr
    _disable_network()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            entries, ok = describe(request["module"], request.get("names")), True
            doc = _doc(sys.modules[request["module"]])
        except BaseException:  # any failure (SystemExit included) only skips this module
            entries, ok, doc = [], False, ""
        answer = {"module": request["module"], "ok": ok, "doc": doc, "entries": entries}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
