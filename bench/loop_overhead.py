"""Loop overhead per turn: a zero-latency model that asks for 4 no-op tools every turn.

Two figures, side by side in one run:
  * the turn loop alone (in-memory hooks): what `chat/turn.py` itself costs per turn;
  * the whole chat service on a SQLite file: the loop plus per-tool debits, storage of every
    result and summary, and the finish step — what a real query pays per turn.

    python bench/loop_overhead.py [--turns 14] [--repeat 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from almanac.billing.pricing import BillingCategory
from almanac.chat.events import ToolResultEvent
from almanac.chat.service import collect
from almanac.chat.turn import Admission, LoopLimits, TurnLoop
from almanac.config import Settings
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.llm.messages import Message, ToolUseBlock
from almanac.main import build_services
from almanac.storage.migrate import upgrade_async
from almanac.tools.base import Tool, ToolContext, ToolOutput
from almanac.tools.registry import ToolRegistry
from almanac.tools.runner import ToolOutcome

TOOLS_PER_TURN = 4


class NoOp:
    name = "noop"
    description = "does nothing"
    input_schema: Mapping[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    output_schema = None
    billing = BillingCategory.TOOL
    source = "bench"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        return ToolOutput("ok")


class MemoryHooks:
    def __init__(self) -> None:
        self.count = 0

    def allocate(self, call: ToolUseBlock) -> tuple[str, ToolContext]:
        self.count += 1
        item_id = f"q1-t{self.count}"
        return item_id, ToolContext("u", "c", 1, "q1", item_id, call.id)

    async def admit(self, calls: Sequence[tuple[ToolUseBlock, Tool, str]]) -> list[Admission]:
        return [Admission(True, 2) for _ in calls]

    async def record(
        self, call: ToolUseBlock, item_id: str, outcome: ToolOutcome, admission: Admission
    ) -> ToolResultEvent:
        return ToolResultEvent(call.id, call.name, item_id, item_id + "-sum", False, "ok", outcome.content, 0, 2)


def script(turns: int) -> list[Any]:
    tool_turn = calls(*[call("noop", {"n": i}) for i in range(TOOLS_PER_TURN)])
    return [tool_turn] * turns + [reply("done")]


async def loop_only(turns: int, repeat: int) -> list[float]:
    per_turn = []
    for _ in range(repeat):
        loop = TurnLoop(
            model=ScriptedModel(script(turns)),
            system="s",
            messages=[Message.user("[ID:q1] go")],
            registry=ToolRegistry([NoOp()]),
            hooks=MemoryHooks(),
            limits=LoopLimits(max_turns=turns + 1),
        )
        started = time.perf_counter()
        async for _event in loop.run():
            pass
        per_turn.append((time.perf_counter() - started) * 1000 / (turns + 1))
    return per_turn


async def whole_service(turns: int, repeat: int) -> list[float]:
    folder = Path(tempfile.mkdtemp())
    url = f"sqlite+aiosqlite:///{folder / 'bench.db'}"
    await upgrade_async(url)
    model = ScriptedModel()
    settings = Settings(_env_file=None, database_url=url, local_user=False, max_turns=turns + 1)  # type: ignore[call-arg]
    services = build_services(settings, model=model)
    services.registry.register(NoOp())
    created = await services.accounts.create_user(email="bench@example.com")
    await services.credits.grant_pack(user_id=created.user.id, amount=1_000_000, reason="bench")
    per_turn = []
    for _ in range(repeat):
        model.enqueue(*script(turns))
        started = time.perf_counter()
        run = await services.chat.start(user=created.user, message="go", conversation_id=None)
        await collect(run)
        per_turn.append((time.perf_counter() - started) * 1000 / (turns + 1))
    await services.database.dispose()
    return per_turn


def describe(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return f"| {name} | {statistics.median(ordered):.3f} | {p95:.3f} |"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=14)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    await loop_only(args.turns, 3)  # warm-up
    loop = await loop_only(args.turns, args.repeat)
    service = await whole_service(args.turns, max(5, args.repeat // 3))
    print(
        f"Loop overhead per turn ({TOOLS_PER_TURN} parallel no-op tools per turn, zero-latency model, "
        f"{args.turns} tool turns + 1 answer turn)\n"
    )
    print("| path | p50 ms/turn | p95 ms/turn |\n|---|---|---|")
    print(describe("turn loop alone (chat/turn.py)", loop))
    print(describe("whole chat service, SQLite file (debits, storage, summaries)", service))
    print(f"\nservice / loop ratio: {statistics.median(service) / statistics.median(loop):.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
