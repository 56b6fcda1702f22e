"""Item IDs: q{N}, q{N}-t{M}, q{N}-r and their -sum summaries."""

import pytest

from almanac.memory.ids import (
    ItemId,
    ItemKind,
    full_id_of,
    parse_item_id,
    query_id,
    response_id,
    sort_key,
    summary_id,
    tool_result_id,
)


def test_ids_are_built_from_query_and_tool_numbers() -> None:
    assert query_id(3) == "q3"
    assert tool_result_id(3, 1) == "q3-t1"
    assert response_id(12) == "q12-r"
    assert summary_id("q3-t1") == "q3-t1-sum"
    assert summary_id("q3-r") == "q3-r-sum"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("q1", ItemId(1)),
        ("q3-t2", ItemId(3, tool=2)),
        ("q10-r", ItemId(10, response=True)),
        ("q3-t2-sum", ItemId(3, tool=2, summary=True)),
        ("q4-r-sum", ItemId(4, response=True, summary=True)),
        (" q2-r ", ItemId(2, response=True)),
    ],
)
def test_valid_ids_parse(text: str, expected: ItemId) -> None:
    assert parse_item_id(text) == expected
    assert str(parse_item_id(text)) == text.strip()


@pytest.mark.parametrize("text", ["", "q", "q0", "q01", "3", "q3-", "q3-t", "q3-t0", "q3-x", "q3-sum", "Q3", "q3-r-r"])
def test_invalid_ids_do_not_parse(text: str) -> None:
    assert parse_item_id(text) is None


def test_kinds() -> None:
    assert ItemId(1).kind is ItemKind.QUERY
    assert ItemId(1, tool=1).kind is ItemKind.TOOL_RESULT
    assert ItemId(1, tool=1, summary=True).kind is ItemKind.TOOL_SUMMARY
    assert ItemId(1, response=True).kind is ItemKind.RESPONSE
    assert ItemId(1, response=True, summary=True).kind is ItemKind.RESPONSE_SUMMARY


def test_queries_have_no_summary() -> None:
    with pytest.raises(ValueError):
        summary_id("q1")
    with pytest.raises(ValueError):
        summary_id("q1-r-sum")


def test_full_id_of_a_summary_is_its_ref() -> None:
    assert full_id_of("q2-t3-sum") == "q2-t3"
    assert full_id_of("q2-r") == "q2-r"


def test_sort_key_orders_items_as_they_happen() -> None:
    ids = ["q2-r", "q1-r-sum", "q10", "q1", "q2-t10", "q2-t2", "q1-r", "q2", "q2-t2-sum"]
    assert sorted(ids, key=sort_key) == ["q1", "q1-r", "q1-r-sum", "q2", "q2-t2", "q2-t2-sum", "q2-t10", "q2-r", "q10"]
