"""What introspection adds to the local index — C functions, builtins, names built at run time, names
re-exported from another package — and how it stays safe: a subprocess, a time limit per module, no
network, failures skipped."""

import os
import sys
from pathlib import Path

from tests.rag_support import write_package

from almanac.rag.introspect import Request, introspect
from almanac.rag.local_docs import Document, Library, distribution_documents, stdlib_documents, with_introspection
from almanac.rag.local_index import chunk_all

OTHER_WIDGETS = '''
class Widget:
    """Draws a widget on the screen."""

    def render(self, scale: int = 1) -> str:
        """Render it at `scale`."""
        return ""
'''

SPEED = '''"""Fast helpers."""

from zlib import crc32 as _crc32

__all__ = ("checksum", "shown") + ()  # computed: only importing the module tells what it exports
checksum = _crc32  # a C function assigned at import: there is no `def` for ast to read


def shown(x: int) -> int:
    """Public, exported, and documented from source."""


def _private() -> None:
    """Private."""
'''

TOOLS = '''__all__ = ["exported"]


def exported() -> None:
    """In __all__."""


def not_exported() -> None:
    """A helper left out of __all__."""
'''


def collected(pairs: list[tuple[Library, list[Document]]], site: Path | None = None) -> dict[str, str]:
    libraries = [library for library, _ in pairs]
    documents = [document for _, found in pairs for document in found]
    _, completed = with_introspection(libraries, documents, extra_path=[site] if site else [])
    return {document.title: document.text for document in completed}


def synthetic_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    write_package(site, "otherpkg", {"otherpkg/__init__.py": "", "otherpkg/widgets.py": OTHER_WIDGETS})
    write_package(
        site,
        "mypkg",
        {
            "mypkg/__init__.py": "from otherpkg.widgets import Widget as Widget\n",
            "mypkg/speed.py": SPEED,
            "mypkg/tools.py": TOOLS,
        },
    )
    return site


def test_a_re_export_from_another_package_is_documented_under_the_public_name(tmp_path: Path) -> None:
    site = synthetic_site(tmp_path)
    docs = collected(list(distribution_documents(["mypkg"], path=[site])), site)
    assert docs["mypkg"].startswith("# Module `mypkg`\n\n## class `mypkg.Widget()`\n\nDefined in `otherpkg.widgets`.")
    assert "Draws a widget on the screen." in docs["mypkg"]
    assert "### `mypkg.Widget.render(self, scale: int = 1) -> str`\n\nRender it at `scale`." in docs["mypkg"]


def test_a_c_function_assigned_at_import_is_documented_and_ast_wins_where_both_see_a_name(tmp_path: Path) -> None:
    site = synthetic_site(tmp_path)
    docs = collected(list(distribution_documents(["mypkg"], path=[site])), site)
    speed = docs["mypkg.speed"]
    assert "## `mypkg.speed.checksum(data, value=0, /)`\n\nDefined in `zlib`.\n\nCompute a CRC-32 checksum" in speed
    assert speed.count("mypkg.speed.shown(") == 1  # from source, not again from introspection
    assert "## `mypkg.speed.shown(x: int) -> int`" in speed
    assert "_private" not in speed


def test_chunks_say_whether_they_document_public_api(tmp_path: Path) -> None:
    site = synthetic_site(tmp_path)
    pairs = list(distribution_documents(["mypkg"], path=[site]))
    _, documents = with_introspection([lib for lib, _ in pairs], [d for _, ds in pairs for d in ds], extra_path=[site])
    public = {chunk.title.rsplit(" > ", 1)[-1]: chunk.public for chunk in chunk_all(documents)}
    assert public["`mypkg.tools.exported() -> None`"] is True
    assert public["`mypkg.tools.not_exported() -> None` (internal)"] is False
    assert public["`mypkg.speed.checksum(data, value=0, /)`"] is True
    assert public["class `mypkg.Widget()`"] is True


def test_an_installed_packages_compiled_api_is_documented_under_the_name_users_import() -> None:
    # `safetensors.safe_open` (from the private `_safetensors_rust`) and `tokenizers.Tokenizer` (from the public
    # `tokenizers.tokenizers`, an extension module): no source to read, so they had no passage at all
    docs = collected(list(distribution_documents(["safetensors", "tokenizers"])))
    assert "## class `safetensors.safe_open(filename, framework" in docs["safetensors"]
    assert "### `safetensors.safe_open.get_tensor(self, /, name)`" in docs["safetensors"]
    assert "## class `tokenizers.Tokenizer(" in docs["tokenizers"]
    assert "### `tokenizers.Tokenizer.from_file(" in docs["tokenizers"]
    assert "`tokenizers.Enum" not in docs["tokenizers"]  # `from enum import Enum` there is no API of tokenizers


def test_the_standard_librarys_c_apis_builtins_and_run_time_names_are_indexed() -> None:
    docs = collected(list(stdlib_documents(["hashlib", "math", "itertools", "builtins", "decimal"])))
    # `decimal` is `from _decimal import *` and nothing else `ast` can read: it was not indexed at all
    assert "class `decimal.Decimal(" in docs["decimal"] and "### `decimal.Decimal.quantize(" in docs["decimal"]
    assert "## `hashlib.md5(string=b'', *, usedforsecurity=True)`" in docs["hashlib"]
    assert "Returns a md5 hash object" in docs["hashlib"]
    assert "## `math.sqrt(x, /)`\n\nReturn the square root of x." in docs["math"]
    assert "## class `itertools.groupby(iterable, key=None)`" in docs["itertools"]
    assert "consecutive keys and groups" in docs["itertools"]
    builtins = docs["builtins"]
    assert "### `str.split(self, /, sep=None, maxsplit=-1)`\n\nReturn a list of the substrings" in builtins
    assert "## `isinstance(obj, class_or_tuple, /)`\n\nReturn whether an object is an instance" in builtins
    assert "### `list.copy(self, /)`\n\nReturn a shallow copy of the list." in builtins
    assert "### `dict.get(self, key, default=None, /)`" in builtins
    assert "## `open(file, mode='r'" in builtins


def test_modules_are_imported_in_a_separate_process_without_network_and_failures_are_skipped(
    tmp_path: Path,
) -> None:
    modules = {
        "hangs": "import time\ntime.sleep(60)\n",
        "noisy": (
            "import os\nprint('hello from an import')\nos.write(1, b'garbage\\n')\n"
            "def where():\n    pass\nwhere.__doc__ = f'pid {os.getpid()}'\n"
        ),
        "crashes": "import os\nos._exit(3)\n",
        "online": (
            "import socket\ntry:\n    socket.socket().connect(('127.0.0.1', 9))\n    result = 'connected'\n"
            "except OSError as exc:\n    result = str(exc)\ndef probe():\n    pass\nprobe.__doc__ = result\n"
        ),
        "broken": "raise ImportError('missing dependency')\n",
        "fine": "def ok():\n    '''Still described after the others.'''\n",
    }
    for name, text in modules.items():
        (tmp_path / f"{name}.py").write_text(text)
    found, report = introspect([Request(name) for name in modules], timeout_s=2.0, extra_path=[tmp_path])
    assert report.timed_out == ["hangs"]
    assert sorted(report.failed) == ["broken", "crashes"]
    assert sorted(found) == ["fine", "noisy", "online"]
    assert found["noisy"].entries[0].doc not in ("", f"pid {os.getpid()}")  # another process
    assert "noisy" not in sys.modules
    assert "network access is disabled" in found["online"].entries[0].doc
    assert found["fine"].entries[0].doc == "Still described after the others."


def test_an_object_several_modules_expose_is_documented_once_and_ast_wins_within_its_package(tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_package(
        site,
        "dup",
        {
            "dup/__init__.py": "from dup.core import *\nfrom dup.core import __all__ as names\n__all__ = list(names)\n",
            "dup/core.py": (
                '__all__ = ["Thing", "helper"]\n'
                'Thing = type("Thing", (), {"__doc__": "A thing made at run time.", "__module__": "dup"})\n\n\n'
                'def helper() -> None:\n    """Helps."""\n'
            ),
            "dup/more.py": 'from dup.core import *\n__all__ = ["Thing", "helper"]\n',
        },
    )
    docs = collected(list(distribution_documents(["dup"], path=[site])), site)
    everything = "\n".join(docs.values())
    assert "## class `dup.Thing()`\n\nA thing made at run time." in docs["dup"]  # the shortest public path
    assert "dup.core.Thing" not in everything and "dup.more.Thing" not in everything
    assert everything.count(".helper(") == 1 and "## `dup.core.helper() -> None`" in docs["dup.core"]


CALLABLES = '''"""Objects called like functions."""

import typing

__all__ = ["skip", "sqrt", "Items", "counter", "lazy"]


class _Skip:
    """Skip the running test with a reason."""

    def __call__(self, reason: str = "") -> None:
        raise RuntimeError(reason)


skip = _Skip()
sqrt = _Skip()
sqrt.__doc__ = "Return the square root of each element."  # as a ufunc carries its own doc
Items = typing.List  # a typing form: callable, documented, and no API of this module
counter = iter([1, 2])  # not callable


class _Proxy:
    """A lazy proxy whose signature cannot be read."""

    def __call__(self) -> None:
        pass

    @property
    def __signature__(self) -> None:
        raise ImportError("the real object could not be loaded")


lazy = _Proxy()
'''


def test_objects_called_like_functions_are_documented_and_typing_forms_are_not(tmp_path: Path) -> None:
    (tmp_path / "calls.py").write_text(CALLABLES)
    found, _ = introspect([Request("calls")], timeout_s=5.0, extra_path=[tmp_path])
    entries = {entry.name: entry for entry in found["calls"].entries}
    assert sorted(entries) == ["skip", "sqrt"]
    assert entries["skip"].kind == "function" and entries["skip"].signature == "(reason: str = '') -> None"
    assert entries["skip"].doc == "Skip the running test with a reason."
    assert entries["sqrt"].doc == "Return the square root of each element."


def test_a_default_value_is_shown_without_the_memory_address_its_repr_has(tmp_path: Path) -> None:
    # `<function loads at 0x7f…>`: a different address in every process, so each build documented the same
    # installed package differently (and the passage's text changed with it)
    (tmp_path / "defaults.py").write_text(
        "def _loads(text):\n    return text\n\nclass _Unset:\n    pass\n\n"
        "def parse(text, loads=_loads, timeout=_Unset()):\n    'Parse text.'\n"
    )
    found, _ = introspect([Request("defaults", names=("parse",))], timeout_s=5.0, extra_path=[tmp_path])
    [entry] = found["defaults"].entries
    assert entry.signature == "(text, loads=<function _loads>, timeout=<defaults._Unset>)"


def test_a_module_exporting_hundreds_of_apis_is_described_whole(tmp_path: Path) -> None:
    # numpy exports 463 functions, ufuncs and classes; those past a cap were documented only under a deprecated
    # alias module's path (`numpy.core.multiarray.where`), or not at all
    names = [f"op{n}" for n in range(470)]
    (tmp_path / "wide.py").write_text("".join(f"def {name}():\n    '''Operation {name}.'''\n" for name in names))
    found, _ = introspect([Request("wide")], timeout_s=5.0, extra_path=[tmp_path])
    assert [entry.name for entry in found["wide"].entries] == sorted(names)


def test_typings_own_aliases_are_documented_as_its_api_but_not_its_type_variables() -> None:
    docs = collected(list(stdlib_documents(["typing"])))["typing"]
    # instances, neither classes nor functions: `typing.Callable` and `typing.Dict` were not in the index
    assert "## class `typing.Callable`\n\nDeprecated alias to collections.abc.Callable." in docs
    assert "## class `typing.Dict`\n\nA generic version of dict." in docs
    assert "typing.AnyStr" not in docs  # a type variable: its documentation is TypeVar's, about no API
