"""What a query costs (pure).

A query costs 5 credits, plus 10 if `retrieve_documentation` ran (once per query, however often it
ran), plus 3 per GitHub MCP tool call, plus 2 per call of any other tool. In a discussion between
models, each participant's turn costs 5 and its tool calls are priced like a query's.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

BASE_COST = 5
DOCUMENTATION_COST = 10
GITHUB_TOOL_COST = 3
OTHER_TOOL_COST = 2
DISCUSSION_TURN_COST = 5  # one participant's turn in a discussion (its tools are priced as above)


class BillingCategory(StrEnum):
    """How a tool call is priced."""

    DOCUMENTATION = "documentation"
    GITHUB = "github"
    TOOL = "tool"


def tool_call_cost(category: BillingCategory, *, documentation_charged: bool) -> int:
    """The price of one tool call, given whether this query already paid for documentation."""
    if category is BillingCategory.DOCUMENTATION:
        return 0 if documentation_charged else DOCUMENTATION_COST
    if category is BillingCategory.GITHUB:
        return GITHUB_TOOL_COST
    return OTHER_TOOL_COST


def query_cost(calls: Iterable[BillingCategory]) -> int:
    """The total price of a query whose tools ran in this order."""
    total = BASE_COST
    documentation_charged = False
    for category in calls:
        total += tool_call_cost(category, documentation_charged=documentation_charged)
        documentation_charged = documentation_charged or category is BillingCategory.DOCUMENTATION
    return total
