"""Deprecated APIs as their source marks them: the reason, or None for an API that is not deprecated."""

import ast

from almanac.rag.deprecation import MAX_REASON_CHARS, deprecation


def _definition(source: str) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef:
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    return node


def test_a_deprecated_decorator_gives_its_message() -> None:
    message = "The `dict` method is deprecated; use `model_dump` instead."
    pep702 = f"@typing_extensions.deprecated('{message}')\ndef dict(self): ..."
    assert deprecation(_definition(pep702)) == "The `dict` method is deprecated; use `model_dump` instead."
    assert deprecation(_definition("@deprecated\ndef old(): ...")) == ""  # no reason given
    # SQLAlchemy's: a version first, then the message — the message is the longer text
    versioned = "@util.deprecated('2.0', 'The execute() method is considered legacy.')\ndef execute(self): ..."
    assert deprecation(_definition(versioned)) == "The execute() method is considered legacy."


def test_a_named_alternative_is_said_as_what_to_use_instead() -> None:
    langchain = "@deprecated(since='0.1.7', alternative='invoke', removal='1.0')\ndef run(self): ..."
    assert deprecation(_definition(langchain)) == "Use `invoke` instead."


def test_a_decorator_named_for_one_deprecation_deprecates_the_api() -> None:
    # SQLAlchemy's `deprecated_20`: deprecated as of a version
    node = _definition(
        "@util.deprecated_20(':meth:`.Query.get`', alternative='Session.get')\ndef get(self, ident): ..."
    )
    assert deprecation(node) == ":meth:`.Query.get` Use `Session.get` instead."


def test_a_decorator_deprecating_parameters_leaves_the_api_current() -> None:
    assert deprecation(_definition("@util.deprecated_params(x=('2.0', 'gone'))\ndef f(x=None): ...")) is None
    assert deprecation(_definition("@functools.cache\ndef f(): ...")) is None


def test_a_deprecation_warning_first_in_the_body_deprecates_the_api() -> None:
    function = """
def json(self):
    '''Serialise.'''
    warnings.warn(f'The `json` method is deprecated; use {NEW!r} instead.', category=PydanticDeprecatedSince20)
    return self.model_dump_json()
"""
    assert deprecation(_definition(function)) == "The `json` method is deprecated; use … instead."
    pending = "def old():\n    warn('Use new()', PendingDeprecationWarning)\n    return new()"
    assert deprecation(_definition(pending)) == "Use new()"
    klass = (
        "class Old:\n    'An old thing.'\n    def __init__(self):\n        warnings.warn('Use New', DeprecationWarning)"
    )
    assert deprecation(_definition(klass)) == "Use New"


def test_a_warning_under_a_condition_or_of_another_kind_leaves_the_api_current() -> None:
    conditional = "def f(x=None):\n    if x is not None:\n        warnings.warn('x is deprecated', DeprecationWarning)"
    assert deprecation(_definition(conditional)) is None  # one way of calling it is deprecated, not the API
    other = "def f():\n    warnings.warn('slow', RuntimeWarning)"
    assert deprecation(_definition(other)) is None


def test_a_docstring_that_opens_with_deprecated_deprecates_the_api() -> None:
    assert deprecation(_definition("def old():\n    '''Deprecated alias of new().'''")) == "Deprecated alias of new()."
    # a directive about one parameter or one way of calling it does not deprecate the API
    partial = (
        "def validate(schema, cls=None):\n    '''Validate.\n\n    .. deprecated:: 4.0\n        Passing cls.\n    '''"
    )
    assert deprecation(_definition(partial)) is None


def test_a_long_reason_is_cut_to_a_bound() -> None:
    node = _definition(f"@deprecated('{'word ' * MAX_REASON_CHARS}')\ndef f(): ...")
    reason = deprecation(node)
    assert reason is not None and len(reason) <= MAX_REASON_CHARS and reason.endswith("…")
