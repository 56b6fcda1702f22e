"""Public API first: chunks know whether they document public API, and ranking prefers it, modestly."""

import pytest

from almanac.rag.chunking import Chunk, is_deprecated_title, is_public_title
from almanac.rag.public import prefer_public
from almanac.rag.retriever import Hit


@pytest.mark.parametrize(
    ("title", "public"),
    [
        ("Module `starlette.middleware.gzip` > class `starlette.middleware.gzip.GZipMiddleware`", True),
        ("Module `m` > class `m.Client(BaseClient)` > `m.Client.__init__(self, _x: int=1)`", True),
        ("Module `m` > `m.Client.send(self, request)`", True),
        ("Installation", True),
        ("Module `m` > class `m.GZipResponder(IdentityResponder)` (internal)", False),
        ("Module `m` > class `m.Helper` (internal) > `m.Helper.run(self)`", False),  # methods of a helper
        ("Module `m` > `m._helper(x)`", False),
        ("Module `m` > class `m._Impl` > `m._Impl.run(self)`", False),
        ("Module `pkg._impl` > `pkg._impl.thing()`", False),
    ],
)
def test_a_chunk_is_public_unless_its_breadcrumb_names_private_or_internal_api(title: str, public: bool) -> None:
    assert is_public_title(title) is public
    assert Chunk("id", "text", title, None, None, 0, 1).public is public


@pytest.mark.parametrize(
    ("title", "deprecated"),
    [
        ("Module `m` > class `m.Model` > `m.Model.dict(self) -> dict` (deprecated)", True),
        ("Module `m` > class `m.Old(Base)` (deprecated) (internal) > `m.Old.run(self)`", True),  # a member of one
        ("Module `m` > class `m.Model` > `m.Model.model_dump(self, deprecated: bool=False)`", False),  # a parameter
        ("Module `m.deprecated` > `m.deprecated.parse(s)`", False),  # the namespace: `ranking.is_aside`
        ("Deprecated features (deprecated)", False),  # prose, no API heading
    ],
)
def test_a_chunk_documents_a_deprecated_api_when_a_heading_is_marked_after_its_name(
    title: str, deprecated: bool
) -> None:
    assert is_deprecated_title(title) is deprecated


def test_internal_hits_slightly_ahead_of_public_ones_go_behind_them() -> None:
    hits = [Hit(0, 10.0), Hit(1, 9.5), Hit(2, 9.0), Hit(3, 0.0)]
    internal = {0, 1}
    ranked = prefer_public(hits, lambda i: i not in internal)
    assert [hit.index for hit in ranked] == [2, 0, 1, 3]
    assert ranked[1].score == pytest.approx(10.0 - 0.15 * 10.0)


def test_the_preference_is_modest_and_changes_nothing_for_public_hits() -> None:
    hits = [Hit(0, 10.0), Hit(1, 5.0), Hit(2, 0.0)]
    assert [hit.index for hit in prefer_public(hits, lambda i: i != 0)] == [0, 1, 2]  # far ahead: stays first
    assert prefer_public(hits, lambda i: True) == hits
    assert prefer_public([], lambda i: False) == []
