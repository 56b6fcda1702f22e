"""Source links that land on the symbol a passage documents.

Passages of the local index carry a heading path as their title, e.g.
"Module `asyncio.tasks` > class `asyncio.tasks.Task(futures._PyFuture)` > `asyncio.tasks.Task.cancel(self, msg=None)`",
and the URL of their library's page. For the standard library, docs.python.org has an anchor per
documented object under its public name (`#asyncio.Task.cancel`), often on a page other than the
package's (`asyncio-task.html`): `symbol_url` finds both. Other sites get no guessed anchor.
Pure functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PYTHON_DOCS = re.compile(r"^(?P<base>https://docs\.python\.org/[\w.]+/library/)(?P<page>[\w.-]+)\.html$")
_NAME = re.compile(r"[A-Za-z_][\w.]*")

# Submodules documented on a page of their own (docs.python.org/3/library/<page>.html).
_OWN_PAGES = {
    "collections.abc": "collections.abc",
    "concurrent.futures": "concurrent.futures",
    "email.message": "email.message",
    "email.parser": "email.parser",
    "email.utils": "email.utils",
    "html.parser": "html.parser",
    "http.client": "http.client",
    "http.cookiejar": "http.cookiejar",
    "http.cookies": "http.cookies",
    "http.server": "http.server",
    "importlib.metadata": "importlib.metadata",
    "importlib.resources": "importlib.resources",
    "logging.config": "logging.config",
    "logging.handlers": "logging.handlers",
    "multiprocessing.shared_memory": "multiprocessing.shared_memory",
    "os.path": "os.path",
    "unittest.mock": "unittest.mock",
    "urllib.error": "urllib.error",
    "urllib.parse": "urllib.parse",
    "urllib.request": "urllib.request",
    "urllib.robotparser": "urllib.robotparser",
    "xml.dom.minidom": "xml.dom.minidom",
    "xml.etree.ElementTree": "xml.etree.elementtree",
}
# Packages whose implementation modules are documented on several pages, under the package's name.
_SPLIT_PAGES = {
    "asyncio": {
        "base_events": "asyncio-eventloop",
        "coroutines": "asyncio-task",
        "events": "asyncio-eventloop",
        "exceptions": "asyncio-exceptions",
        "futures": "asyncio-future",
        "locks": "asyncio-sync",
        "protocols": "asyncio-protocol",
        "queues": "asyncio-queue",
        "runners": "asyncio-runner",
        "streams": "asyncio-stream",
        "subprocess": "asyncio-subprocess",
        "taskgroups": "asyncio-task",
        "tasks": "asyncio-task",
        "threads": "asyncio-task",
        "timeouts": "asyncio-task",
        "transports": "asyncio-protocol",
        "unix_events": "asyncio-eventloop",
    },
}


@dataclass(frozen=True, slots=True)
class Symbol:
    """What a passage documents: its module and the object's dotted name (empty for the module)."""

    module: str
    name: str


def passage_symbol(title: str) -> Symbol | None:
    """The module and object a heading path names, or None when it names no Python object."""
    parts = [part.strip() for part in title.split(" > ") if part.strip()]
    if not parts:
        return None
    module = _dotted(parts[0].removeprefix("Module ")) if parts[0].startswith("Module ") else ""
    name = _dotted(parts[-1].removeprefix("class ")) if len(parts) > 1 else ""
    if not module and not name:
        return None
    if name.endswith(".__init__"):
        name = name.removesuffix(".__init__")
    return Symbol(module or name.rsplit(".", 1)[0], name)


def public_name(symbol: Symbol, package: str) -> tuple[str, str]:
    """(page, anchor) where docs.python.org documents `symbol` of package `package`: the object under
    its public dotted name, a module as `module-<name>`; no anchor ("") for an implementation module."""
    own = next((m for m in _OWN_PAGES if symbol.module == m or symbol.module.startswith(m + ".")), None)
    if own is not None:
        return _OWN_PAGES[own], symbol.name or f"module-{own}"
    if symbol.module == package or not symbol.module.startswith(package + "."):
        return package, symbol.name or f"module-{package}"
    submodule = symbol.module[len(package) + 1 :].split(".", 1)[0]
    page = _SPLIT_PAGES.get(package, {}).get(submodule, package)
    if not symbol.name.startswith(symbol.module + "."):
        return page, ""
    return page, package + symbol.name[len(symbol.module) :]


def symbol_url(url: str | None, title: str) -> str | None:
    """`url` pointed at the object the passage documents, where the site is known to have anchors."""
    match = _PYTHON_DOCS.match(url or "")
    symbol = passage_symbol(title)
    if match is None or symbol is None:
        return url
    page, anchor = public_name(symbol, match["page"])
    return f"{match['base']}{page}.html" + (f"#{anchor}" if anchor else "")


def _dotted(heading: str) -> str:
    """The dotted name a heading such as "`a.b.C(base)`", "class `a.b.C`" or "property `a.b.C.size`" names: the
    first name written as code, whatever kind of object the words before it say it is."""
    text = heading.strip()
    if "`" in text:
        text = text.split("`", 1)[1]
    text = re.sub(r"^(?:class |async )+", "", text)
    found = _NAME.match(text)
    return found.group(0).rstrip(".") if found else ""
