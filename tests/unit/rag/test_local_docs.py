"""Local documentation: folders, installed distributions and the stdlib, read without importing."""

import os
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest
from tests.rag_support import write_package

from almanac.rag.local_docs import (
    Document,
    Library,
    distribution_documents,
    fair_order,
    folder_documents,
    housekeeping,
    module_markdown,
    normalise,
    stdlib_documents,
    with_introspection,
)

SOURCE = '''"""Retry helpers.

Use them around flaky network calls.
"""

import random


class Backoff(Base):
    """Exponential backoff with jitter."""

    def __init__(self, base: float = 0.5, cap: float = 8.0) -> None:
        self.base = base

    def delay(self, attempt: int) -> float:
        """The delay before `attempt`."""
        return 1.0

    def _private(self):
        """Hidden."""


async def retry(fn, *, attempts: int = 3) -> object:
    """Call `fn` until it succeeds."""


def _helper():
    """Not public."""
'''


def test_module_markdown_lists_the_public_api_with_signatures() -> None:
    text = module_markdown(SOURCE, "pkg.retry")
    assert text.startswith("# Module `pkg.retry`\n\nRetry helpers.")
    assert "## class `pkg.retry.Backoff(Base)`\n\nExponential backoff with jitter." in text
    assert "### `pkg.retry.Backoff.__init__(self, base: float=0.5, cap: float=8.0) -> None`" in text
    assert "### `pkg.retry.Backoff.delay(self, attempt: int) -> float`\n\nThe delay before `attempt`." in text
    assert "## `async pkg.retry.retry(fn, *, attempts: int=3) -> object`" in text
    assert "_private" not in text and "_helper" not in text and "Hidden" not in text


def test_modules_without_public_api_or_unparsable_give_nothing() -> None:
    assert module_markdown("import os\n_x = 1\n", "m") == ""
    assert module_markdown("def broken(:\n", "m") == ""
    deep = "if x:\n    pass\n" + "".join(f"elif x == {i}:\n    pass\n" for i in range(5000))
    assert module_markdown(deep, "m") == ""  # nested deeper than `ast` can build: skipped, not a failed index


def test_folders_become_libraries(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "deploy").mkdir(parents=True)
    (docs / "intro.md").write_text("# Intro\n\nWelcome.")
    (docs / "deploy" / "guide.rst").write_text("Deploying\n=========\n\nUse Docker.")
    (docs / "deploy" / "notes.txt").write_text("Remember the healthcheck.")
    (docs / "deploy" / "image.png").write_bytes(b"\x89PNG")
    libraries, documents = folder_documents(docs)
    assert sorted(lib.id for lib in libraries) == ["/local/deploy", "/local/docs"]
    assert sorted((d.library_id, d.fmt, d.title) for d in documents) == [
        ("/local/deploy", "rst", "guide"),
        ("/local/deploy", "text", "notes"),
        ("/local/docs", "markdown", "intro"),
    ]
    assert folder_documents(tmp_path / "missing") == ([], [])


def test_installed_distributions_are_read_without_importing_them() -> None:
    assert "smmap" not in sys.modules
    [(library, documents)] = list(distribution_documents(["smmap"]))
    assert library.id == "/pypi/smmap" and library.kind == "package" and library.version
    assert library.url and library.url.startswith("http")
    assert any(d.title == "smmap README" for d in documents)
    assert any(d.title.startswith("smmap.") and "## class" in d.text for d in documents)
    assert "smmap" not in sys.modules


def test_a_packages_testing_module_is_its_api_and_its_test_suites_are_not(tmp_path: Path) -> None:
    # `click.testing.CliRunner`, `numpy.testing.assert_allclose`: what users test their own code with
    files = {
        "clicky/__init__.py": "",
        "clicky/testing.py": 'class CliRunner:\n    """Invokes a command line script for testing."""\n',
        "clicky/tests/test_runner.py": 'def test_invoke():\n    """A test of the package itself."""\n',
        "clicky/sub/testing.py": 'def helper():\n    """Deeper: a test helper of the package."""\n',
    }
    write_package(tmp_path, "clicky", files)
    [(_, documents)] = list(distribution_documents(["clicky"], path=[tmp_path]))
    titles = {document.title for document in documents}
    assert "clicky.testing" in titles
    assert not {"clicky.tests.test_runner", "clicky.sub.testing"} & titles


def test_an_api_its_package_re_exports_higher_up_says_the_name_users_import_it_by(tmp_path: Path) -> None:
    # `fastapi.applications.FastAPI` is written there and imported as `fastapi.FastAPI`
    files = {
        "webby/__init__.py": "from .applications import App\nfrom .helpers import serve, old_serve\n",
        "webby/applications.py": 'class App:\n    """The application."""\n',
        "webby/helpers.py": (
            'def serve(app):\n    """Serve it."""\n'
            '@deprecated(\'Use serve\')\ndef old_serve(app):\n    """Serve it, the old way."""\n'
            'def local():\n    """Only here."""\n'
        ),
    }
    write_package(tmp_path, "webby", files)
    [(_, documents)] = list(distribution_documents(["webby"], path=[tmp_path]))
    text = {document.title: document.text for document in documents}
    assert (
        "## class `webby.applications.App`\n\nImported as `webby.App`.\n\nThe application."
        in text["webby.applications"]
    )
    helpers = text["webby.helpers"]
    assert "## `webby.helpers.serve(app)`\n\nImported as `webby.serve`.\n\nServe it." in helpers
    # a deprecated API's passage still opens with the reason
    deprecated = (
        "## `webby.helpers.old_serve(app)` (deprecated)\n\n**Deprecated.** Use serve\n\nImported as `webby.old_serve`."
    )
    assert deprecated in helpers
    assert "## `webby.helpers.local()`\n\nOnly here." in helpers  # not re-exported: no note


def test_a_capped_package_takes_its_subpackages_in_turns_shallow_modules_first() -> None:
    generated = [f"sdk.types.t{i:03}" for i in range(500)] + [f"sdk.types.beta.b{i}" for i in range(50)]
    modules = [*generated, "sdk.resources.messages.messages", "sdk.resources", "sdk.resources.files", "sdk.client"]
    order = fair_order(modules)
    assert order[:3] == ["sdk.client", "sdk.resources", "sdk.types.t000"]  # each turn: shallow first
    # the small subpackage's deep module comes long before the big one's 500 generated modules are through
    assert order.index("sdk.resources.messages.messages") < 10
    assert order.index("sdk.types.t010") < order.index("sdk.types.beta.b0")  # within one: shallow first
    assert sorted(order) == sorted(modules)


def test_an_sdk_with_thousands_of_generated_type_modules_keeps_its_client_methods() -> None:
    # anthropic ships ~2,900 modules under `anthropic.types`: taken shallow-first they filled the 400-module
    # cap, and `Messages.create` (in `anthropic.resources.messages.messages`) was not in the index at all
    [(_, documents)] = list(distribution_documents(["anthropic"]))
    [messages] = [d for d in documents if d.title == "anthropic.resources.messages.messages"]
    assert "`anthropic.resources.messages.messages.Messages.create(" in messages.text


def test_the_standard_library_is_indexed_per_module() -> None:
    libraries = {library.id: documents for library, documents in stdlib_documents()}
    assert "/python/asyncio" in libraries and "/python/json" in libraries
    assert "/python/test" not in libraries and "/python/encodings" not in libraries
    asyncio_docs = "\n".join(d.text for d in libraries["/python/asyncio"])
    assert "class `asyncio.taskgroups.TaskGroup" in asyncio_docs


def test_os_path_is_documented_once_under_the_name_code_uses() -> None:
    # its shared part and the other platform's module are `os.path` under other names
    other = "ntpath" if os.path.__name__ == "posixpath" else "posixpath"
    names = [os.path.__name__, "genericpath", other, "nturl2path"]
    assert [library.id for library, _ in stdlib_documents(names)] == ["/python/os.path"]


def test_a_file_named_like_a_standard_library_module_is_not_documented_as_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a project's own `colorsys.py` first on the path (the working directory of a service started from it)
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)  # an imported module would be found as imported
    (tmp_path / "colorsys.py").write_text('def project_secret():\n    """Our own code."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    [(library, documents)] = list(stdlib_documents(["colorsys"]))
    text = "\n".join(d.text for d in documents)
    assert library.id == "/python/colorsys"
    assert "colorsys.rgb_to_hsv(" in text and "project_secret" not in text


def test_names_are_normalised_like_pypi() -> None:
    assert normalise("Foo_Bar.baz") == "foo-bar-baz"


def test_an_unclosed_code_fence_in_a_docstring_does_not_swallow_the_next_sections() -> None:
    from almanac.rag.chunking import chunk_document

    source = (
        'class A:\n    """Use it.\n\n    ```python\n    A()\n    ```\n    ```\n    """\n\n\nclass B:\n    """Bee."""\n'
    )
    chunks = chunk_document(module_markdown(source, "m"), fmt="markdown")
    assert any(chunk.title.endswith("class `m.B`") and "Bee." in chunk.text for chunk in chunks)


def test_a_rest_heading_underlined_with_tildes_does_not_swallow_the_modules_functions() -> None:
    from almanac.rag.chunking import chunk_document
    from almanac.rag.ranking import symbol_of

    # `ast`'s own docstring: a reST title whose `~~~` underline reads as a Markdown code fence
    source = '"""\nast\n~~~\n\nThe ast module helps to process trees.\n"""\n\ndef parse(source):\n    """Parse."""\n'
    chunks = chunk_document(module_markdown(source, "ast"), fmt="markdown")
    assert "ast.parse" in [symbol_of(chunk) for chunk in chunks]


def test_a_markdown_heading_in_a_docstring_stays_in_its_apis_section() -> None:
    from almanac.rag.chunking import chunk_document
    from almanac.rag.ranking import symbol_of

    docstring = "An app.\n\n    ## Example\n\n    ```python\n    # not a heading\n    App()\n    ```\n    "
    source = f'class App:\n    """{docstring}"""\n'
    chunks = chunk_document(module_markdown(source, "web"), fmt="markdown")
    assert [symbol_of(chunk) for chunk in chunks if "App()" in chunk.text] == ["web.App"]
    assert any("**Example**" in chunk.text and "# not a heading" in chunk.text for chunk in chunks)


def test_an_overloaded_or_redefined_name_is_one_api_with_the_documentation_its_declarations_carry() -> None:
    source = (
        "from typing import overload\n"
        "class Messages:\n"
        "    @overload\n    def create(self, *, stream: Literal[False]) -> Message:\n"
        '        """Send a list of messages and get the next one."""\n'
        "    @overload\n    def create(self, *, stream: Literal[True]) -> Stream:\n"
        '        """Send a list of messages and get the next one."""\n'
        "    def create(self, *, stream: bool = False) -> Message | Stream: ...\n"
        '    @property\n    def model(self) -> str:\n        """The model asked."""\n'
        "    @model.setter\n    def model(self, value: str) -> None: ...\n"
        "@overload\ndef load(s: str) -> dict: ...\n"
        'def load(s):\n    """Load a document."""\n'
    )
    text = module_markdown(source, "sdk")
    # one section each: the implementation's signature, the @overload declarations' documentation
    assert text.count("Messages.create(") == 1
    expected = "### `sdk.Messages.create(self, *, stream: bool=False) -> Message | Stream`\n\nSend a list of messages"
    assert expected in text
    assert text.count("Messages.model") == 1 and "### property `sdk.Messages.model: str`\n\nThe model asked." in text
    assert text.count("sdk.load(") == 1 and "## `sdk.load(s)`\n\nLoad a document." in text


def test_helpers_left_out_of_all_are_marked_internal() -> None:
    text = module_markdown('__all__ = ["Client"]\nclass Client:\n    pass\nclass Pool:\n    pass\n', "m")
    assert "## class `m.Client`\n" in text + "\n"
    assert "## class `m.Pool` (internal)" in text


def test_without_all_classes_only_the_modules_other_classes_instantiate_are_marked_internal() -> None:
    source = (
        "class GZipMiddleware:\n    def __call__(self, scope):\n        responder = GZipResponder(self.app)\n"
        "class IdentityResponder:\n    def send(self): ...\n"
        "class GZipResponder(IdentityResponder):\n    def __init__(self, app):\n        super().__init__()\n"
        "        IdentityResponder.send(self)\n"
        "def gzip_app(app):\n    return GZipMiddleware(app)\n"
    )
    text = module_markdown(source, "m")
    assert "## class `m.GZipMiddleware`\n" in text
    assert "## class `m.GZipResponder(IdentityResponder)` (internal)" in text
    assert "## class `m.IdentityResponder`\n" in text  # a base class, not instantiated by another class
    assert "## `m.gzip_app(app)`" in text and "gzip_app(app)` (internal)" not in text


def test_a_deprecated_api_is_marked_after_its_name_and_its_passage_opens_with_the_reason() -> None:
    source = (
        "__all__ = ['Model']\n"
        "class Model:\n"
        "    @deprecated('The `dict` method is deprecated; use `model_dump` instead.')\n"
        "    def dict(self) -> dict: ...\n"
        "    def model_dump(self) -> dict:\n        'Dump the model.'\n"
        "@deprecated('Use Model')\nclass OldModel:\n    def dump(self): ...\n"
    )
    text = module_markdown(source, "m")
    reason = "**Deprecated.** The `dict` method is deprecated; use `model_dump` instead."
    assert f"### `m.Model.dict(self) -> dict` (deprecated)\n\n{reason}" in text
    assert "### `m.Model.model_dump(self) -> dict`\n\nDump the model." in text
    assert "## class `m.OldModel` (deprecated) (internal)\n\n**Deprecated.** Use Model" in text  # internal last


def test_a_computed_all_marks_nothing_internal() -> None:
    source = (
        "import numpy as np\n__all__ = np.__all__[:]\n__all__ += ['rand']\ndef empty(shape): ...\ndef rand(): ...\n"
    )
    text = module_markdown(source, "numpy.matlib")
    assert "## `numpy.matlib.empty(shape)`\n" in text + "\n" and "(internal)" not in text


def test_modules_imported_under_another_name_are_documented_under_it() -> None:
    # `os.path` is `posixpath` here: its passages say `os.path.join`, as code and the Python documentation do
    libraries, documents = with_introspection(*_collected(stdlib_documents([os.path.__name__])))
    assert [library.id for library in libraries] == ["/python/os.path"]
    assert libraries[0].url and libraries[0].url.endswith("/library/os.path.html")
    assert "## `os.path.join(" in documents[0].text and "posixpath.join(" not in documents[0].text


def test_a_module_that_imports_its_list_of_exports_is_documented_by_introspection() -> None:
    # `collections.abc` is `from _collections_abc import *` and that module's `__all__`
    _, documents = with_introspection(*_collected(stdlib_documents(["collections"])))
    abc = next(document for document in documents if document.title == "collections.abc")
    assert "class `collections.abc.Mapping" in abc.text and "class `collections.abc.Iterable" in abc.text


def _collected(found: Iterable[tuple[Library, list[Document]]]) -> tuple[list[Library], list[Document]]:
    libraries: list[Library] = []
    documents: list[Document] = []
    for library, docs in found:
        libraries.append(library)
        documents.extend(docs)
    return libraries, documents


def test_an_undocumented_method_has_the_documentation_of_the_base_class_method_it_overrides() -> None:
    source = (
        "class Command:\n"
        "    def invoke(self, ctx):\n        '''Run the callback with the context.'''\n"
        "class MultiCommand(Command):\n    pass\n"
        "class Group(MultiCommand, Mixin):\n"
        "    def invoke(self, ctx): ...\n"
        "    def resolve(self, ctx): ...\n"
        "    def close(self):\n        '''Close the group.'''\n"
    )
    text = module_markdown(source, "cli")
    # through a base that does not override it, as `inspect.getdoc` finds it, with where it comes from
    assert (
        "### `cli.Group.invoke(self, ctx)`\n\nRun the callback with the context.\n\n"
        "(The documentation of `cli.Command.invoke`, which it overrides.)"
    ) in text
    assert "### `cli.Group.resolve(self, ctx)`\n\n###" in text  # nothing to inherit
    assert "### `cli.Group.close(self)`\n\nClose the group." in text and text.count("which it overrides") == 1


def test_a_public_class_documents_the_methods_it_inherits_from_private_bases_of_its_module() -> None:
    source = (
        "class _Container:\n"
        "    def add_argument(self, *args):\n        '''Add an argument.'''\n"
        "    def set_defaults(self, **kwargs): ...\n"
        "    def _registry(self): ...\n"
        "class _Holder(_Container):\n"
        "    def parse(self):\n        '''Parse, the holder's way.'''\n"
        "class Formatter:\n"
        "    def parse(self):\n        '''Parse, the formatter's way.'''\n"
        "    def width(self): ...\n"
        "class Parser(Formatter, _Holder):\n"
        "    def set_defaults(self, **kwargs):\n        '''Set the defaults.'''\n"
    )
    text = module_markdown(source, "cli")
    assert (
        "### `cli.Parser.add_argument(self, *args)`\n\nAdd an argument.\n\n(Inherited from `cli._Container`.)" in text
    )
    assert text.count("set_defaults(") == 1  # the class's own
    # a public base's methods are documented under it, and win over a farther private base's
    assert "cli.Parser.parse" not in text and "cli.Parser.width" not in text
    assert "_registry" not in text


def test_a_method_or_function_bound_to_another_name_is_documented_under_that_name_too() -> None:
    # redis-py's `incr = incrby`: `Redis.incr` is called as often as any method defined with `def`
    source = (
        "__all__ = ['dumps', 'encode', 'Client']\n"
        'def dumps(obj):\n    """Serialize obj."""\n'
        "encode = dumps\n"
        "shadow = dumps\n"
        "class Client:\n"
        "    def incrby(self, name, amount=1):\n"
        '        """Increment the value of name by amount.\n\n        Details.\n        """\n'
        "    incr = incrby\n"
        "    def _raw(self): ...\n"
        "    raw = _raw\n"
        "    size = 3\n"
    )
    text = module_markdown(source, "kv")
    assert (
        "### `kv.Client.incr(self, name, amount=1)`\n\nIncrement the value of name by amount.\n\n"
        "(Another name for `kv.Client.incrby`.)" in text  # its summary: not the details again
    )
    assert text.count("Details.") == 1
    assert "## `kv.encode(obj)`\n\nSerialize obj.\n\n(Another name for `kv.dumps`.)" in text
    assert "## `kv.shadow(obj)` (internal)" in text  # left out of `__all__`, as any helper
    assert "### `kv.Client.raw(self)`" in text  # the public name of a private method
    assert "size" not in text


def test_a_property_is_documented_as_an_attribute_not_a_call() -> None:
    from almanac.rag.chunking import chunk_document
    from almanac.rag.ranking import symbol_of

    source = (
        "import functools\n"
        "class PurePath:\n"
        '    @property\n    def suffix(self) -> str:\n        """The file extension of the final component."""\n'
        '    @functools.cached_property\n    def parts(self):\n        """The components."""\n'
        '    def with_suffix(self, suffix: str) -> \'PurePath\':\n        """Another suffix."""\n'
    )
    text = module_markdown(source, "paths")
    # `path.suffix`, never `path.suffix()`: a model writing code from the passage must not call it
    assert "### property `paths.PurePath.suffix: str`\n\nThe file extension" in text
    assert "### property `paths.PurePath.parts`\n\nThe components." in text
    assert "### `paths.PurePath.with_suffix(self, suffix: str) -> 'PurePath'`" in text
    symbols = {symbol_of(chunk) for chunk in chunk_document(text, fmt="markdown")}
    assert {"paths.PurePath.suffix", "paths.PurePath.parts", "paths.PurePath.with_suffix"} <= symbols


def test_apis_defined_in_conditional_blocks_are_documented_and_a_scripts_main_block_is_not() -> None:
    source = (
        "try:\n    from _speedups import crc\nexcept ImportError:\n"
        '    def crc(data: bytes) -> int:\n        """Checksum of the data."""\n'
        "class Popen:\n"
        '    """A child process."""\n'
        "    if _mswindows:\n"
        '        def terminate(self):\n            """Terminate the process with TerminateProcess()."""\n'
        "        kill = terminate\n"
        "    else:\n"
        '        def terminate(self):\n            """Terminate the process with SIGTERM."""\n'
        '        def kill(self):\n            """Kill the process with SIGKILL."""\n'
        'if __name__ == "__main__":\n    def main():\n        """Run as a script."""\n'
    )
    text = module_markdown(source, "proc")
    # `subprocess.Popen.kill` is defined under `if _mswindows: … else: …`: it was not in the index at all
    assert "### `proc.Popen.kill(self)`\n\nKill the process with SIGKILL." in text
    assert text.count("proc.Popen.terminate(") == 1  # one API, the first branch's definition
    assert "## `proc.crc(data: bytes) -> int`\n\nChecksum of the data." in text
    assert "main" not in text


def test_parameters_documented_in_their_annotations_are_listed_below_a_plain_signature() -> None:
    source = (
        "from typing import Annotated\nfrom typing_extensions import Doc\n"
        "def Header(\n"
        "    default: Annotated[Any, Doc('\\n        Default value if the parameter field is not set.\\n    ')]"
        " = Undefined,\n"
        "    *,\n"
        '    alias: Annotated[str | None, Doc("An alternative name."), Strict()] = None,\n'
        "    convert_underscores: bool = True,\n"
        ") -> Any:\n    return params.Header(default)\n"
    )
    text = module_markdown(source, "api")
    # FastAPI documents every parameter this way: printed as written, the signature alone filled several passages
    assert "## `api.Header(default=Undefined, *, alias=None, convert_underscores: bool=True) -> Any`" in text
    expected = "- `default: Any`: Default value if the parameter field is not set.\n"
    assert expected + "- `alias: Annotated[str | None, Strict()]`: An alternative name." in text
    assert "Doc(" not in text


def test_a_classs_attributes_documented_by_a_string_after_them_are_listed_with_its_documentation() -> None:
    source = (
        "class ConfigDict(TypedDict, total=False):\n"
        '    """A TypedDict for configuring behaviour."""\n'
        "    frozen: bool\n"
        '    """\n    Whether models are faux-immutable.\n\n    Example:\n        ...\n    """\n'
        "    extra = 'ignore'\n"
        '    """What to do with extra attributes."""\n'
        "    _cache: dict\n"
        '    """Private."""\n'
        "    undocumented: int\n"
    )
    text = module_markdown(source, "config")
    # pydantic documents `ConfigDict`'s fifty options this way: "frozen" was in no passage of the index
    expected = "- `frozen: bool`: Whether models are faux-immutable.\n- `extra`: What to do with extra attributes."
    assert "## class `config.ConfigDict(TypedDict)`\n\nA TypedDict for configuring behaviour.\n\n" in text
    assert expected in text
    assert "Example" not in text and "_cache" not in text and "undocumented" not in text


def test_a_readme_section_about_the_project_rather_than_its_use_is_housekeeping() -> None:
    for title in ("SDK > Contributing", "SDK > 🤝 How to contribute", "SDK > Code of Conduct > Our Pledge",
                  "SDK > 1. Licence", "SDK > History", "SDK > Support", "SDK > Security"):  # fmt: skip
        assert housekeeping(title), title
    for title in ("Contributing", "SDK > Getting started", "SDK > Support for HTTP/2", "SDK > History of a key",
                  "SDK > Changes to defaults", "SDK > Security considerations", "SDK > Authentication"):  # fmt: skip
        assert not housekeeping(title), title
