"""Public names re-exported from private modules are documented under the public name — on synthetic
packages (every import form) and on real installed ones (httpx, anthropic) through the local index."""

import ast
from typing import Any

import pytest

from almanac.rag.local_docs import distribution_documents, module_markdown
from almanac.rag.local_index import IndexInputs, build_local_index
from almanac.rag.local_search import load_local_index
from almanac.rag.pipeline import DocRequest, DocumentationPipeline
from almanac.rag.query import RuleQueryParser
from almanac.rag.reexports import aliases, computed_all, public_names, unresolved_exports
from almanac.rag.rerank import FusedOrder
from almanac.rag.select import RuleSelector
from almanac.rag.sources.local import LocalSource

PACKAGE = {
    "pkg": (
        'from ._client import *\nfrom ._config import Timeout as Deadline, helper\nfrom .public import Shown\n'
        'from typing import Any\n__all__ = ["Client", "Deadline", "helper", "Shown", "Any", "Missing"]\n',
        True,
    ),
    "pkg._client": (
        '__all__ = ["Client"]\nfrom ._base import Client\n',
        False,
    ),
    "pkg._base": (
        'class Client:\n    """Sends requests."""\n\n    def get(self, url: str) -> str:\n        """GET it."""\n',
        False,
    ),
    "pkg._config": (
        'class Timeout:\n    """How long to wait."""\n\n\nasync def helper(x: int) -> int:\n    """Helps."""\n',
        False,
    ),
    "pkg.public": ('class Shown:\n    """Documented in its own module."""\n', False),
}  # fmt: skip


def source_of(module: str) -> tuple[str, bool] | None:
    return PACKAGE.get(module)


def test_all_names_are_followed_through_star_imports_aliases_and_chains() -> None:
    text = module_markdown(PACKAGE["pkg"][0], "pkg", is_package=True, source_of=source_of)
    assert "## class `pkg.Client`\n\nDefined in `pkg._base`.\n\nSends requests." in text
    assert "### `pkg.Client.get(self, url: str) -> str`\n\nGET it." in text
    assert "## class `pkg.Deadline`\n\nDefined in `pkg._config`.\n\nHow long to wait." in text
    assert "## `async pkg.helper(x: int) -> int`\n\nDefined in `pkg._config`.\n\nHelps." in text
    # Public modules are indexed on their own; other packages and unknown names are not followed.
    assert "Shown" not in text and "Any" not in text and "Missing" not in text


def test_a_package_without_all_re_exports_its_explicit_public_imports() -> None:
    init = "from ._config import Timeout, _hidden\nimport os\n"
    text = module_markdown(init, "pkg", is_package=True, source_of=source_of)
    assert "## class `pkg.Timeout`" in text and "_hidden" not in text
    # A plain module without __all__ re-exports nothing: its imports are its own business…
    assert module_markdown(init, "pkg.tools", source_of=source_of) == ""


def test_a_plain_module_re_exports_what_it_imports_as_itself() -> None:
    # …except what it imports in the explicit re-export form (`sqlalchemy.sql.expression`'s `select`, `text`)
    expression = "from ._config import Timeout as Timeout\nfrom ._config import helper\n"
    text = module_markdown(expression, "pkg.expression", source_of=source_of)
    assert "## class `pkg.expression.Timeout`\n\nDefined in `pkg._config`.\n\nHow long to wait." in text
    assert "helper" not in text


# stripe's way: the names are imported only for type checkers, and a module `__getattr__` loads them
LAZY = (
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._config import Timeout as Timeout\n"
    "    from pkg._config import helper\n"
    "_import_map = {'Timeout': 'pkg._config'}\nif not TYPE_CHECKING:\n"
    "    def __getattr__(name):\n        return _import_map[name]\n"
)
# anyio's way: `if TYPE_CHECKING or not install_lazy_importer():` — its whole API was missing from `anyio`
EITHER = (
    "from typing import TYPE_CHECKING\nfrom ._lazy import install\n"
    "if TYPE_CHECKING or not install():\n    from ._config import Timeout as Timeout\n"
    "    from ._config import helper as helper\n"
)


@pytest.mark.parametrize("source", [LAZY, EITHER], ids=["lazily loaded", "type checkers or else at run time"])
def test_a_module_re_exports_what_it_imports_for_type_checkers_when_it_also_serves_them(source: str) -> None:
    text = module_markdown(source, "pkg", is_package=True, source_of=source_of)
    assert "## class `pkg.Timeout`\n\nDefined in `pkg._config`." in text
    assert "## `async pkg.helper(x: int) -> int`" in text


def test_imports_for_type_checkers_alone_or_under_another_condition_are_no_exports() -> None:
    # without a module __getattr__ such imports serve annotations only: nothing is exported
    assert module_markdown(LAZY.split("_import_map")[0], "pkg.tools", source_of=source_of) == ""
    # any other condition is no such promise: a plain module's imports under it stay its own business
    other = EITHER.replace("TYPE_CHECKING or not install()", "sys.version_info >= (3, 12)")
    assert module_markdown(other, "pkg", is_package=True, source_of=source_of) == ""


def test_installed_httpx_and_anthropic_document_their_clients_under_the_public_name() -> None:
    docs = {doc.title: doc.text for _, found in distribution_documents(["httpx", "anthropic"]) for doc in found}
    assert "## class `httpx.AsyncClient(BaseClient)`\n\nDefined in `httpx._client`." in docs["httpx"]
    assert "An asynchronous HTTP client, with connection pooling" in docs["httpx"]
    assert "## class `httpx.Timeout`\n\nDefined in `httpx._config`." in docs["httpx"]
    assert "## class `anthropic.Anthropic(SyncAPIClient)`\n\nDefined in `anthropic._client`." in docs["anthropic"]
    assert "Construct a new synchronous Anthropic client instance." in docs["anthropic"]


@pytest.mark.parametrize(
    ("question", "library", "title", "text"),
    [
        ("How do I use httpx AsyncClient with connection pooling?", "httpx", "httpx.AsyncClient",
         "asynchronous HTTP client"),
        ("httpx Timeout configuration for connect and read", "httpx", "httpx.Timeout", "Timeout configuration"),
        ("How do I construct a synchronous Anthropic client?", "anthropic", "anthropic.Anthropic",
         "synchronous Anthropic client"),
    ],
)  # fmt: skip
async def test_questions_about_re_exported_apis_find_their_docstrings(
    sqlite_url: str, build: Any, question: str, library: str, title: str, text: str
) -> None:
    services, _ = build(sqlite_url)
    inputs = IndexInputs(packages=True, package_names=("httpx", "anthropic"), stdlib=False)
    await build_local_index(services.database, inputs, None)
    index = await load_local_index(services.database)
    assert index is not None
    local = LocalSource(index=lambda: index, embedder=None)
    pipeline = DocumentationPipeline(
        source=local, fallback=None, parser=RuleQueryParser(local.names), selector=RuleSelector(), reranker=FusedOrder()
    )
    result = await pipeline.run(DocRequest(question))
    assert result.library.id == f"/pypi/{library}"
    found = [p.chunk for p in result.passages if f"`{title}" in p.chunk.title or f"`{title}" in p.chunk.text]
    assert found, [p.chunk.title for p in result.passages]
    assert any(text in chunk.text for chunk in found)


@pytest.mark.parametrize(
    ("source", "module", "is_package", "gaps"),
    [
        # __all__ names source does not define: left to introspection (constants too; it keeps only APIs)
        ('__all__ = ["md5", "new"]\ndef new(): pass\n', "hashlib", False, ("md5",)),
        # without __all__, the explicit re-export form from another package
        ("from starlette.middleware.gzip import GZipMiddleware as GZipMiddleware\n", "fastapi.gzip", False,
         ("GZipMiddleware",)),
        ("from starlette.middleware.gzip import GZipMiddleware\n", "fastapi.gzip", False, ()),
        # a package __init__ re-exports what it imports from other packages; its own public modules are indexed
        ("from starlette import Request\nfrom .routing import APIRouter\n", "fastapi", True, ("Request",)),
        # a standard-library import in an installed package is a use, not its API (tokenizers' `Enum`)...
        ("from enum import Enum\nfrom typing import List\n", "tokenizers", True, ()),
        # ...but a standard-library package's import from its C accelerator is its API (`ctypes.Structure`)
        ("from _ctypes import Structure\n", "ctypes", True, ("Structure",)),
        # computed at run time: only introspection can tell
        ('__all__ = ("md5",) + ("sha1",)\n', "hashlib", False, None),
        ('__all__ = ["sep"]\n__all__.extend(["getcwd"])\n', "os", False, None),
        ("def __getattr__(name): ...\n", "lazy", False, None),
        ('__all__ = ["a"]\nif X:\n    __all__.extend(core.__all__)\n', "numpy", True, None),  # nested: numpy
        ('__all__ = ["a"]\n__all__ += ["b"]\ndef a(): pass\ndef b(): pass\n', "m", False, ()),  # literal
    ],
)  # fmt: skip
def test_unresolved_exports_are_what_introspection_must_fill(
    source: str, module: str, is_package: bool, gaps: tuple[str, ...] | None
) -> None:
    tree = ast.parse(source)
    documented = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert unresolved_exports(tree, module, is_package=is_package, documented=documented) == gaps


def test_a_name_a_public_module_assigns_from_compiled_code_is_left_to_introspection() -> None:
    # cryptography's way: `x509/base.py` binds `load_pem_x509_certificate = rust_x509.load_pem_x509_certificate`
    # and `x509/__init__.py` exports it; no `def` documents it anywhere, so only importing it can
    sources = {"pkg.base": ("from pkg._rust import x509 as rust\nload = rust.load\ndef parse(): pass\n", False)}
    init = ast.parse("from pkg.base import load, parse\n__all__ = ['load', 'parse']\n")
    assert unresolved_exports(init, "pkg", is_package=True, documented=set(), source_of=sources.get) == ("load",)
    # a name the public module defines is documented there (and without the sources, nothing is known)
    assert unresolved_exports(init, "pkg", is_package=True, documented=set()) == ()


@pytest.mark.parametrize(
    "init",
    [
        # tokenizers' way: `from .tokenizers import Tokenizer`, a module that is `tokenizers.abi3.so`
        "from .native import Tokenizer, encode\nfrom .pure import helper\n",
        # safetensors' way: a private compiled module
        "from ._native import Tokenizer, encode\nfrom .pure import helper\n",
        # onnxruntime's way: imported in a top-level `try:` (its fallback is not what the package exports)
        "try:\n    from pkg._native import Tokenizer, encode\nexcept ImportError:\n    raise\n"
        "from .pure import helper\n",
        # with a literal __all__ the same
        "from .native import Tokenizer, encode\nfrom .pure import helper\n"
        "__all__ = ['Tokenizer', 'encode', 'helper']\n",
    ],
)
def test_names_a_package_imports_from_its_compiled_modules_are_left_to_introspection(init: str) -> None:
    # a module of the package with no Python source (an extension module) documents nothing when read: only
    # importing it can; a name from a readable public module is documented there
    sources = {"pkg.pure": ("def helper(): pass\n", False)}
    tree = ast.parse(init)
    gaps = unresolved_exports(tree, "pkg", is_package=True, documented=set(), source_of=sources.get)
    assert gaps == ("Tokenizer", "encode")


def test_a_private_modules_name_that_reading_could_not_document_is_left_to_introspection() -> None:
    # a package __init__ without __all__ exports what it imports from its private modules; the re-exports found
    # by reading are documented, the rest (here bound by assignment) only importing can tell
    sources = {"pkg._impl": ("def load(): pass\nfast = _speedups.fast\n", False)}
    tree = ast.parse("from ._impl import load, fast\n")
    assert unresolved_exports(tree, "pkg", is_package=True, documented={"load"}, source_of=sources.get) == ("fast",)
    # not in a plain module: there an import is a use, not an export
    assert unresolved_exports(tree, "pkg.mod", is_package=False, documented=set(), source_of=sources.get) == ()


def test_a_list_of_exports_imported_from_another_module_is_known_only_at_run_time() -> None:
    imported = ast.parse("from _collections_abc import *\nfrom _collections_abc import __all__\n")
    assert computed_all(imported)
    assert not computed_all(ast.parse("from _impl import *\n__all__ = ['Mapping']\n"))
    # `decimal`: everything of its C accelerator, and no list — only importing it shows the names
    assert computed_all(
        ast.parse("try:\n    from _decimal import *\nexcept ImportError:\n    from _pydecimal import *\n")
    )
    assert not computed_all(ast.parse("from ._impl import *\n"))  # a module of its own package: read with ast


def test_an_alias_is_a_single_plain_assignment_of_a_function_of_the_same_body() -> None:
    body = ast.parse(
        "def get(): ...\n"
        "fetch = get\n"  # an alias
        "load = get\nload = None\n"  # bound twice: not one
        "count: int = 0\n"
        "def put(): ...\n"
        "put2 = put\n"
        "get = get\n"  # its own name
        "_hidden = get\n"
        "also = missing\n"
        "if True:\n    later = get\n"
    ).body
    assert [(name, function.name) for name, function in aliases(body)] == [
        ("fetch", "get"),
        ("put2", "put"),
        ("later", "get"),
    ]


WEB = {
    "web": ("from .applications import App\nfrom .routing import *\nfrom ._impl import Hidden\n", True),
    "web.applications": ('class App:\n    """The application."""\n', False),
    "web.routing": (
        '__all__ = ["route", "Router"]\nfrom .routing_core import Router\n\ndef route(path):\n    """Route."""\n',
        False,
    ),
    "web.routing_core": ("from .router_impl import Base as Router\n", False),  # named otherwise where defined
    "web.router_impl": ("if True:\n    class Base:\n        pass\n", False),  # in a block
    "web._impl": ("class Hidden:\n    pass\n", False),
    "web.server": (  # a module declaring exports it imports from its package: `aiohttp.web`
        '__all__ = ["Server", "App"]\nfrom .server_core import Server\nfrom .applications import App\n',
        False,
    ),
    "web.server_core": ("class Server:\n    pass\n", False),
    "web.zone": ('__all__ = ["Server"]\nfrom .server_core import Server\n', False),  # read after `web.server`
    "web.api": ('__all__ = ["Server"]\nfrom .server_core import Server\n', False),  # the first by name
    "web.tools": ("class Tool:\n    pass\n", False),
    "web.deep": ("", True),
    "web.deep.models": ('__all__ = ["Model"]\nclass Model:\n    pass\n', False),
    "web.deep.extra": (  # re-exports a class defined higher up, whose own module is the shorter name
        '__all__ = ["Tool"]\nfrom ..tools import Tool\n',
        False,
    ),
    "web.typed": (  # loads its names on first use; the star import is for type checkers
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..deep.models import *\n"
        "def __getattr__(name): ...\n",
        True,
    ),
    "web.plain": ("from .applications import App\n", False),  # neither package nor `__all__`: no re-export
}  # fmt: skip


def test_each_api_is_known_by_the_shortest_public_name_that_re_exports_it() -> None:
    names = public_names(WEB, lambda module: WEB.get(module))
    assert names == {
        "web.applications.App": "web.App",  # the package beats `web.server`, one level deeper
        "web.routing.route": "web.route",  # through a star import and the starred module's `__all__`
        "web.router_impl.Base": "web.Router",  # a chain of imports, to a definition in a block
        "web.server_core.Server": "web.api.Server",  # at the same depth, a re-exporting module wins
        "web.deep.models.Model": "web.typed.Model",  # star-imported for type checkers
    }


def test_public_names_ignore_other_packages_private_modules_and_missing_ones() -> None:
    package = {
        "app": ("from web.applications import App\nfrom ._private import Secret\nfrom .gone import Nothing\n", True),
        "app._private": ("class Secret:\n    pass\n", False),
        "app._internal": ('__all__ = ["Secret"]\nfrom ._private import Secret\n', True),
    }
    assert public_names(package, lambda module: package.get(module)) == {}
