"""How widely installed code uses an API: the names a module's code uses, counted per module, as a 0–1 prior."""

import ast
from textwrap import dedent

from almanac.rag.popularity import SATURATION, Popularity, characteristic, usage


def refs(source: str) -> frozenset[str]:
    source = dedent(source)
    return usage(ast.parse(source), source)[0]


def test_a_module_uses_what_it_imports_under_the_names_it_binds() -> None:
    used = refs(
        """
        import json
        import numpy as np
        import os.path
        from urllib.parse import urlparse as parse_url
        from datetime import datetime

        def f(text):
            parse_url(text)
            np.array([1])
            os.path.join("a", "b")
            return json.loads(text), datetime.now()
        """
    )
    assert {"json.loads", "numpy.array", "urllib.parse.urlparse", "datetime.datetime.now", "os.path.join"} <= used


def test_imports_inside_functions_count_and_relative_imports_and_locals_do_not() -> None:
    used = refs(
        """
        from . import sibling
        from .helpers import run

        def f(shutil_like):
            import shutil
            shutil.rmtree("x")
            sibling.go()
            shutil_like.copy()
        """
    )
    assert "shutil.rmtree" in used
    assert not any(name.startswith(("sibling", "helpers", "run", "shutil_like")) for name in used)


def test_the_builtins_a_module_calls_count_and_a_name_it_imports_is_no_builtin() -> None:
    used = refs(
        """
        from shlex import split as open

        def f(text, table):
            words = sorted(text.split(","))
            print(table.keys(), isinstance(words, list))
            return open(text)
        """
    )
    assert {"builtins.sorted", "builtins.print", "builtins.isinstance"} <= used
    assert "builtins.list" not in used  # `list` passed as a type is no call
    assert "builtins.open" not in used and "shlex.split" in used  # `open` is the name the module imported
    assert not {"str.split", "dict.keys"} & used  # a method on an object of unknown type is not counted
    popularity = Popularity.count([used, frozenset({"builtins.sorted"})])
    assert popularity.score("sorted") > popularity.score("isinstance") > 0  # a builtin is documented by its bare name
    assert popularity.score("open") == 0.0


def test_an_api_counts_once_per_module_under_its_package_and_last_name() -> None:
    popularity = Popularity.count(
        [frozenset({"asyncio.gather", "asyncio.sleep"}), frozenset({"asyncio.gather"}), frozenset({"json.loads"})]
    )
    # where it is defined (`asyncio.tasks.gather`) it is the API used as `asyncio.gather`
    assert popularity.score("asyncio.tasks.gather") > popularity.score("asyncio.sleep") > 0
    assert popularity.score("toolkit.never_used") == 0.0
    assert popularity.score("asyncio") == 0.0  # a module is not an API


def test_a_packages_use_of_its_own_helpers_counts_apart_from_other_packages_use() -> None:
    popularity = Popularity.count(
        [frozenset({"vendor.utils.gather_all", "asyncio.gather"}), frozenset({"vendor.utils.gather_all"})],
        names=["vendor.runner", "vendor.chains.base"],
    )
    assert popularity.score("vendor.utils.gather_all") > 0  # central to vendor itself
    assert popularity.score("vendor.utils.gather_all", foreign=True) == 0.0  # no other package uses it
    assert popularity.score("asyncio.tasks.gather", foreign=True) == popularity.score("asyncio.tasks.gather") > 0
    assert Popularity.from_bytes(popularity.to_bytes()) == popularity
    # counted without the modules' names, everything is foreign
    unnamed = Popularity.count([frozenset({"vendor.utils.gather_all"})])
    assert unnamed.score("vendor.utils.gather_all", foreign=True) == unnamed.score("vendor.utils.gather_all") > 0


def test_the_score_saturates() -> None:
    many = Popularity.count([frozenset({"shutil.rmtree"})] * (SATURATION * 10))
    enough = Popularity.count([frozenset({"shutil.rmtree"})] * SATURATION)
    assert many.score("shutil.rmtree") == enough.score("shutil.rmtree") == 1.0


def test_counts_survive_storage_and_a_stored_index_without_them_scores_nothing() -> None:
    popularity = Popularity.count([frozenset({"re.sub"}), frozenset({"re.sub", "re.split"})])
    assert Popularity.from_bytes(popularity.to_bytes()) == popularity
    assert Popularity.from_bytes(None).score("re.sub") == 0.0


def test_a_method_is_not_the_module_function_of_the_same_name() -> None:
    popularity = Popularity.count([frozenset({"asyncio.run", "datetime.datetime.now"})])
    assert popularity.score("asyncio.runners.run") > 0 and popularity.score("asyncio.runners.Runner.run") == 0.0
    assert popularity.score("datetime.datetime.now") > 0  # a class's method used through the imported class


def test_a_long_elif_chain_is_read_without_recursion() -> None:
    branches = "".join(f"elif x == {i}:\n    import json\n" for i in range(1500))  # deeper than recursion allows
    source = f"if x:\n    pass\n{branches}json.dumps(x)\n"
    assert "json.dumps" in usage(ast.parse(source), source)[0]


def around(source: str) -> dict[str, frozenset[str]]:
    source = dedent(source)
    return usage(ast.parse(source), source)[1]


def test_the_words_around_a_use_are_the_callers_name_docstring_line_and_comments_above() -> None:
    found = around(
        '''
        import shutil
        from urllib.parse import urlencode

        def find_program(name):
            """Locate a tool on the search path."""
            # look for the binary
            exe = shutil.which(name)
            return exe

        def build_link(params):
            return "?" + urlencode(params)

        shutil.rmtree("at module level")  # not in a function: no context
        '''
    )
    assert {"find_program", "Locate", "tool", "look", "binary", "exe", "name"} <= found["shutil.which"]
    assert {"build_link", "params"} <= found["urllib.urlencode"]  # keyed like `key`
    assert "build_link" not in found["shutil.which"] and "shutil.rmtree" not in found


def test_an_apis_characteristic_words_are_those_its_callers_share_and_others_do_not() -> None:
    modules = [
        {"shutil.which": frozenset({"find_executable", "shutil", "self"}), "json.loads": frozenset({"self", "parse"})},
        {"shutil.which": frozenset({"locate_binary", "shutil", "self"}), "json.loads": frozenset({"value", "payload"})},
        {"shutil.which": frozenset({"executable", "self"}), "os.getenv": frozenset({"self", "value"})},
    ]
    words = characteristic(modules, limit=3)["shutil.which"].split()
    assert words[0] == "executable"  # in two of its callers (`find_executable` split into its parts)
    assert "self" not in words  # said around every API's uses
    assert "shutil" not in words  # its own name adds nothing


def test_the_words_survive_storage_and_counts_stored_without_them_still_load() -> None:
    popularity = Popularity.count(
        [frozenset({"shutil.which"})], [{"shutil.which": frozenset({"find_executable"})}, {"json.loads": frozenset()}]
    )
    assert "executable" in popularity.words["shutil.which"]
    assert Popularity.from_bytes(popularity.to_bytes()) == popularity
    older = Popularity.from_bytes(b'{"shutil.which": 3}')  # an index stored before the words
    assert older.modules == {"shutil.which": 3} and older.words == {}
