"""The test suite's own scheduling: heavy tests lead the xdist workers' first blocks."""

from __future__ import annotations

from tests.scheduling import block_sizes, spread_heavy


def _group(name: str) -> str | None:
    return name.split(":")[0] if ":" in name else None


def test_blocks_are_split_as_work_stealing_splits_them() -> None:
    assert block_sizes(10, 4) == [2, 2, 3, 3]
    assert block_sizes(8, 2) == [4, 4]
    assert sum(block_sizes(2439, 4)) == 2439


def test_each_heavy_group_leads_a_block_of_its_own() -> None:
    items = [f"t{i}" for i in range(12)] + ["fuzz:a", "fuzz2:b", "floor:gated", "floor:rrf"]
    ordered = spread_heavy(items, 2, _group)
    assert sorted(ordered) == sorted(items)
    first, second = ordered[:8], ordered[8:]
    assert first[:3] == ["fuzz:a", "floor:gated", "floor:rrf"]  # a group stays together, in order
    assert second[:1] == ["fuzz2:b"]
    assert [i for i in ordered if _group(i) is None] == [f"t{i}" for i in range(12)]  # light ones keep order


def test_without_workers_or_heavy_tests_the_order_is_kept() -> None:
    items = ["a", "fuzz:b", "c"]
    assert spread_heavy(items, 1, _group) == items
    assert spread_heavy(["a", "b"], 4, _group) == ["a", "b"]
