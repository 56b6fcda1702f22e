"""The order pytest-xdist's workers receive the tests in (`make test` runs them with `--dist worksteal`).

Work stealing first splits the collection into one contiguous block per worker and each worker runs its
block from the front; an idle worker later takes the back half of the longest queue. A few tests cost
far more CPU than the rest (the schema fuzzers, the hybrid retrieval floor's embeddings); where they sit
together in one block, one worker runs them one after another while the others run out of work, and
the run ends on a long tail. `spread_heavy` puts one heavy group at the front of each block instead, so
they start at once, on different workers. Tests marked `heavy(group=…)` with the same group stay
together, in their order (they share a module-scoped fixture that must not be built twice).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def block_sizes(total: int, workers: int) -> list[int]:
    """The sizes of the contiguous blocks work stealing sends its idle workers first (as xdist does:
    each gets what is left divided by the workers still waiting)."""
    sizes, left = [], total
    for remaining in range(workers, 0, -1):
        sizes.append(left // remaining)
        left -= sizes[-1]
    return sizes


def spread_heavy(items: Sequence[T], workers: int, group_of: Callable[[T], str | None]) -> list[T]:
    """`items` reordered so that the heavy groups (`group_of` gives an item's group, None for a light
    item) lead the workers' blocks, round-robin in collection order; light items keep their order."""
    groups: dict[str, list[T]] = {}
    light: list[T] = []
    for item in items:
        group = group_of(item)
        if group is None:
            light.append(item)
        else:
            groups.setdefault(group, []).append(item)
    if not groups or workers < 2:
        return list(items)
    leading: list[list[T]] = [[] for _ in range(workers)]
    for n, members in enumerate(groups.values()):
        leading[n % workers].extend(members)
    ordered: list[T] = []
    rest = iter(light)
    for size, heavy in zip(block_sizes(len(items), workers), leading, strict=True):
        ordered.extend(heavy)
        ordered.extend(item for _, item in zip(range(max(0, size - len(heavy))), rest, strict=False))
    ordered.extend(rest)
    return ordered
