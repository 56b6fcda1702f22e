"""The Python documentation's library reference: each documented API's description, from the reST sources."""

from pathlib import Path

from almanac.rag.python_reference import (
    MIN_DATA_USES,
    descriptions,
    entries_markdown,
    from_bytes,
    module_pages,
    python_docs,
    read_reference,
    reference_dir,
    to_bytes,
    undocumented,
)

PAGE = """\
:mod:`toolbox` --- Handy tools
==============================

.. module:: toolbox
   :synopsis: Handy tools for files.

The :mod:`toolbox` module offers tools.

.. function:: locate(cmd, mode=0, \\
                     path=None)

   Return the path to an executable which would run for *cmd*, or ``None``
   when no such program is found.  See also
   :func:`os.access` and :func:`~os.path.join`.

   .. versionadded:: 3.3

   .. XXX say more about modes

.. function:: pack(data)
              unpack(blob)

   Convert between data and blobs; the ``*`` and ``**`` forms are kept.

.. class:: Crate(size)

   A crate of a given size.

   .. method:: seal()

      Close the crate for shipping; a sealed crate raises
      :exc:`CrateError` when opened.

   .. attribute:: label

      The crate's label.

.. method:: Crate.open(force=False)
   :noindex:

   Open the crate.

.. currentmodule:: toolbox.extra

.. data:: LIMIT

   The largest crate, in :ref:`units <crate-units>`.
"""

BUILTINS = """\
Built-in Functions
==================

.. function:: isinstance(object, classinfo)

   Return ``True`` if the *object* argument is an instance of *classinfo*.

.. class:: str(object='')

.. method:: str.split(sep=None, maxsplit=-1)

   Return a list of the words in the string, using *sep* as the delimiter string.
"""


def by_name(text: str) -> dict[str, str]:
    return {entry.name: entry.text for page in module_pages(text) for entry in page.all_entries()}


def test_each_object_directive_gives_its_qualified_name_and_plain_description() -> None:
    found = by_name(PAGE)
    assert set(found) == {
        "toolbox.locate",
        "toolbox.pack",
        "toolbox.unpack",  # a stacked signature documents a second name with the same text
        "toolbox.Crate",
        "toolbox.Crate.seal",  # a member nested in its class
        "toolbox.Crate.label",
        "toolbox.Crate.open",  # a member documented after the class, by its dotted name
        "toolbox.extra.LIMIT",  # after `currentmodule`
    }
    assert found["toolbox.locate"].startswith("Return the path to an executable which would run for cmd, or `None`")
    assert "See also `os.access` and `os.path.join`." in found["toolbox.locate"]  # roles as code spans
    assert "XXX" not in found["toolbox.locate"]  # a reST comment is no text
    packing = "Convert between data and blobs; the `*` and `**` forms are kept."  # literals are not emphasis
    assert found["toolbox.pack"] == found["toolbox.unpack"] == packing
    assert found["toolbox.Crate"] == "A crate of a given size."  # its members are not part of its own text
    # a wrapped line that starts with a role is text, not a directive option
    sealed = "Close the crate for shipping; a sealed crate raises `CrateError` when opened."
    assert found["toolbox.Crate.seal"] == sealed
    assert found["toolbox.Crate.open"] == "Open the crate."  # the `:noindex:` option is not text
    assert found["toolbox.extra.LIMIT"] == "The largest crate, in `units`."


def test_objects_before_any_module_directive_are_builtins_named_as_users_write_them() -> None:
    found = by_name(BUILTINS)
    assert set(found) >= {"isinstance", "str.split"}
    assert found["str.split"].startswith("Return a list of the words in the string")


def test_descriptions_are_keyed_like_the_index_keys_apis_and_survive_storage(tmp_path: Path) -> None:
    (tmp_path / "toolbox.rst.txt").write_text(PAGE)
    (tmp_path / "functions.rst.txt").write_text(BUILTINS)
    texts = descriptions(tmp_path)
    assert "executable" in texts["toolbox.locate"]
    assert "toolbox.LIMIT" in texts  # package and last name, as `popularity.key`
    assert "Close the crate" in texts["toolbox.Crate.seal"]
    assert "instance" in texts["isinstance"]
    assert from_bytes(to_bytes(texts)) == texts
    assert to_bytes({}) is None and from_bytes(None) == {}


def test_the_reference_folder_is_found_where_debian_installs_it_or_named(tmp_path: Path) -> None:
    assert reference_dir((3, 99), root=tmp_path) is None
    folder = tmp_path / "python3.99" / "html" / "_sources" / "library"
    folder.mkdir(parents=True)
    assert reference_dir((3, 99), root=tmp_path) == folder
    assert python_docs("none") is None and python_docs("") is None
    assert python_docs(str(folder)) == folder
    assert python_docs("auto") == reference_dir()


EXTRA = """\
.. module:: toolbox

.. data:: DEFAULT_SIZE

   The size of a crate made without one.

.. method:: loop.close_all()

   Close every crate the event loop opened.

.. function:: _private_helper()

   Not for users.

.. data:: EMPTY
"""


def test_what_only_the_reference_documents_is_found_with_its_signature(tmp_path: Path) -> None:
    (tmp_path / "toolbox.rst.txt").write_text(PAGE)
    (tmp_path / "toolbox-extra.rst.txt").write_text(EXTRA)
    pages = read_reference(tmp_path)
    documented = ["toolbox.locate", "toolbox._impl.pack", "toolbox.Crate"]  # `pack` under its defining module
    # how many modules use each (by key): at least MIN_DATA_USES for data to be documented
    uses = {"toolbox.LIMIT": MIN_DATA_USES, "toolbox.DEFAULT_SIZE": MIN_DATA_USES - 1, "toolbox.EMPTY": 99}
    uses["toolbox.Crate.open"] = 99
    missing = undocumented(pages, documented, uses)
    names = {module: [entry.name for entry in entries] for module, entries in missing.items()}
    # a function no passage documents (a stacked signature's second name), data that code uses; not the data
    # few modules use, members of classes (`Crate.seal`, `loop.close_all`), private names, objects without a text
    assert names == {"toolbox": ["toolbox.unpack"], "toolbox.extra": ["toolbox.extra.LIMIT"]}
    assert undocumented(pages, [*documented, "toolbox.unpack"], {}) == {}  # data nobody uses: none
    markdown = entries_markdown([*missing["toolbox"], *missing["toolbox.extra"]])
    assert markdown.startswith("## `toolbox.unpack(blob)`\n\nConvert between data and blobs;")
    assert markdown.endswith("## `toolbox.extra.LIMIT`\n\nThe largest crate, in `units`.")  # data: no signature
