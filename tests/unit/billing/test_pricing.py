"""Query prices: 5 base, +10 once if documentation ran, +3 per GitHub tool, +2 per other tool."""

import pytest

from almanac.billing.pricing import BillingCategory as C
from almanac.billing.pricing import query_cost, tool_call_cost


@pytest.mark.parametrize(
    ("calls", "cost"),
    [
        ([], 5),
        ([C.DOCUMENTATION], 15),
        ([C.DOCUMENTATION, C.DOCUMENTATION, C.DOCUMENTATION], 15),
        ([C.DOCUMENTATION, C.GITHUB, C.GITHUB], 21),
        ([C.TOOL], 7),
        ([C.TOOL, C.GITHUB, C.DOCUMENTATION, C.TOOL], 5 + 2 + 3 + 10 + 2),
    ],
)
def test_query_cost(calls: list[C], cost: int) -> None:
    assert query_cost(calls) == cost


def test_documentation_is_charged_once_per_query() -> None:
    assert tool_call_cost(C.DOCUMENTATION, documentation_charged=False) == 10
    assert tool_call_cost(C.DOCUMENTATION, documentation_charged=True) == 0
    assert tool_call_cost(C.GITHUB, documentation_charged=True) == 3
    assert tool_call_cost(C.TOOL, documentation_charged=False) == 2
