"""Parameters and attributes documented outside docstrings: taken out of the signature, listed in the passage."""

import ast

from almanac.rag.signatures import (
    MAX_ITEM_CHARS,
    Parameter,
    documented_attributes,
    parameters_markdown,
    split_documented,
)


def _function(source: str) -> ast.FunctionDef:
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def test_doc_annotations_leave_the_signature_and_keep_their_type_and_documentation() -> None:
    node = _function(
        "def Path(default: typing.Annotated[Any, doc.Doc('The default.')] = ..., *,"
        " title: Annotated[str, Doc('''\n    A title.\n\n    More.\n    ''')] = None, plain: int = 0): ..."
    )
    args, parameters = split_documented(node.args)
    assert ast.unparse(args) == "default=..., *, title=None, plain: int=0"
    assert parameters == [Parameter("default", "Any", "The default."), Parameter("title", "str", "A title.\n\nMore.")]
    assert "Doc(" in ast.unparse(node.args)  # the tree's own node stays as parsed


def test_a_signature_without_doc_annotations_is_returned_as_it_is() -> None:
    node = _function("def f(a: Annotated[int, Meta('not documentation')], b: 'str' = 'x'): ...")
    assert split_documented(node.args) == (node.args, [])


def test_each_item_is_one_line_its_first_paragraph_cut_to_a_bound() -> None:
    long = "word " * MAX_ITEM_CHARS
    text = parameters_markdown([Parameter("title", "str", "A title.\n\nMore."), Parameter("x", "", long)])
    first, second = text.split("\n")
    assert first == "- `title: str`: A title."
    assert second.startswith("- `x`: word word") and second.endswith("…")
    assert len(second) <= MAX_ITEM_CHARS + len("- `x`: ")


def test_attributes_are_those_a_string_right_after_them_documents() -> None:
    source = "class C:\n    a: int = 1\n    'About a.'\n    b = 2\n    'About b.'\n    c: int\n    d = 3\n"
    source += "    x = 1\n    42\n"  # a number after it documents nothing
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ClassDef)
    assert documented_attributes(node) == [Parameter("a", "int", "About a."), Parameter("b", "", "About b.")]
