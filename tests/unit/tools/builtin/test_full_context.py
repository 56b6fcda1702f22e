"""retrieve_full_context returns the full-track text of an ID of the caller's conversation."""

from typing import Any

import pytest
from tests.support import make_user

from almanac.memory.history import HistoryStore
from almanac.storage.records import ItemRecord
from almanac.tools.base import ToolContext
from almanac.tools.builtin.full_context import FullContextTool

ITEMS = [
    ItemRecord("q1", 1, "query", "Show me a retry decorator"),
    ItemRecord("q1-t1", 1, "tool_result", "def retry(): ...  # full code", tool_name="search", tool_input={"q": "r"}),
    ItemRecord("q1-t1-sum", 1, "tool_summary", "found retry code", ref="q1-t1"),
    ItemRecord("q1-r", 1, "response", "Here is the complete decorator:\n```python\ndef retry(): ...\n```"),
    ItemRecord("q1-r-sum", 1, "response_summary", "Showed a retry decorator.", ref="q1-r"),
    ItemRecord("q2", 2, "query", "now with backoff"),
]


@pytest.fixture
async def setup(database_url: str, build: Any) -> tuple[FullContextTool, ToolContext, ToolContext]:
    services, _ = build(database_url)
    owner = await make_user(services)
    other = await make_user(services)
    from almanac.storage import conversations as store

    async with services.database.session() as session:
        conversation = await store.create_conversation(session, user_id=owner.user.id, title="t")
    await services.history.add(conversation_id=conversation.id, items=ITEMS)
    tool = FullContextTool(HistoryStore(services.database))
    mine = ToolContext(owner.user.id, conversation.id, 2, "q2", "q2-t1", "toolu_1")
    theirs = ToolContext(other.user.id, conversation.id, 2, "q2", "q2-t1", "toolu_1")
    return tool, mine, theirs


async def test_returns_the_full_text_of_a_response(setup: tuple[FullContextTool, ToolContext, ToolContext]) -> None:
    tool, mine, _ = setup
    output = await tool.run({"id": "q1-r"}, mine)
    assert output.content.startswith("[ID:q1-r] Full text of the answer to q1:\n")
    assert output.content.endswith("```python\ndef retry(): ...\n```")


async def test_a_summary_id_returns_the_item_it_refers_to(
    setup: tuple[FullContextTool, ToolContext, ToolContext],
) -> None:
    tool, mine, _ = setup
    output = await tool.run({"id": "q1-t1-sum"}, mine)
    assert "def retry(): ...  # full code" in output.content
    assert output.content.startswith('[ID:q1-t1] Full result of search({"q":"r"}):')


async def test_unknown_ids_list_the_valid_ids_near_them(
    setup: tuple[FullContextTool, ToolContext, ToolContext],
) -> None:
    """A wrong ID is an error the model reads, with the valid IDs near it — and costs nothing."""
    tool, mine, _ = setup
    missing = await tool.run({"id": "q1-t7"}, mine)
    assert missing.is_error and missing.free
    assert "No item q1-t7 in this conversation. Valid IDs near it: q1, q1-t1, q1-r, q2" in missing.content
    garbled = await tool.run({"id": "the code"}, mine)
    assert garbled.is_error and garbled.free and "is not an item ID" in garbled.content


async def test_another_users_conversation_looks_empty(setup: tuple[FullContextTool, ToolContext, ToolContext]) -> None:
    tool, _, theirs = setup
    output = await tool.run({"id": "q1-r"}, theirs)
    assert output.is_error and "no earlier items" in output.content


async def test_history_store_round_trip(database_url: str, build: Any) -> None:
    services, _ = build(database_url)
    user = await make_user(services)
    from almanac.storage import conversations as store

    async with services.database.session() as session:
        conversation = await store.create_conversation(session, user_id=user.user.id, title="t")
    await services.history.add(conversation_id=conversation.id, items=ITEMS)
    await services.history.set_content(
        conversation_id=conversation.id, item_id="q1-r-sum", content="new", status="done"
    )
    items = await services.history.items(user_id=user.user.id, conversation_id=conversation.id)
    assert [i.item_id for i in items] == [i.item_id for i in ITEMS]
    assert next(i for i in items if i.item_id == "q1-r-sum").content == "new"
    assert items[1].tool_input == {"q": "r"}


async def test_a_long_item_comes_in_parts_each_saying_where_the_next_starts(
    setup: tuple[FullContextTool, ToolContext, ToolContext],
) -> None:
    tool, mine, _ = setup
    tool.max_chars = 10
    first = await tool.run({"id": "q1-r"}, mine)
    assert 'retrieve_full_context(id="q1-r", offset=10)' in first.content
    second = await tool.run({"id": "q1-r", "offset": 10}, mine)
    assert "(from character 10)" in second.content
    past = await tool.run({"id": "q1-r", "offset": 10_000}, mine)
    assert past.is_error and past.free
