"""With a summariser that takes 5 s (a real model does), how long after the answer's last token
does the user get `message_end`, and how soon is the conversation free for the next question?

The answer streams from a scripted model; it is long enough to need a summary, and its tool result
too. Measured through the real chat service on a SQLite file, several times, in one run.

    python bench/summary_latency.py [--delay 5] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from almanac.chat.events import MessageEnd, SummaryEvent, TextDeltaEvent
from almanac.config import Settings
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.main import build_services
from almanac.memory.summarise import SummaryRequest
from almanac.storage.migrate import upgrade_async

ANSWER = "Use a TaskGroup, cancel on the first failure, and retry with backoff. " * 40


class SlowSummariser:
    name = "slow"

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    async def summarise(self, request: SummaryRequest) -> str:
        await asyncio.sleep(self.delay_s)
        return "A short summary."


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=5.0)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    url = f"sqlite+aiosqlite:///{Path(tempfile.mkdtemp()) / 'bench.db'}"
    await upgrade_async(url)
    model = ScriptedModel()
    settings = Settings(_env_file=None, database_url=url, local_user=False, summary_wait_s=30)  # type: ignore[call-arg]
    services = build_services(settings, model=model, summariser=SlowSummariser(args.delay))
    user = (await services.accounts.create_user(email="bench@example.com")).user
    await services.credits.grant_pack(user_id=user.id, amount=10_000, reason="bench")
    to_end: list[float] = []
    to_free: list[float] = []
    to_summaries: list[float] = []
    conversation: str | None = None
    for _ in range(args.runs):
        model.enqueue(calls(call("retrieve_full_context", {"id": "q1"})), reply(ANSWER), reply("next"))
        run = await services.chat.start(user=user, message="how do I cancel tasks?", conversation_id=conversation)
        conversation = run.conversation_id
        last_token = ended = 0.0
        stream = run.events()
        async for event in stream:
            now = time.perf_counter()
            if isinstance(event, TextDeltaEvent):
                last_token = now
            elif isinstance(event, MessageEnd):
                ended = now
                to_end.append(ended - last_token)
                follow_up = await services.chat.start(user=user, message="next", conversation_id=conversation)
                to_free.append(time.perf_counter() - ended)
                async for _ in follow_up.events():
                    pass
            elif isinstance(event, SummaryEvent):
                to_summaries.append(now - ended)
    await services.summaries.drain(timeout_s=args.delay + 5)
    await services.database.dispose()
    ms = 1000

    def show(values: list[float]) -> str:
        return f"median {statistics.median(values) * ms:.1f} ms, max {max(values) * ms:.1f} ms"

    print(f"Summariser delay {args.delay:g} s, {args.runs} answers\n")
    print(f"last text token -> message_end:                  {show(to_end)}")
    print(f"message_end -> next question accepted (no 409):  {show(to_free)}")
    print(f"message_end -> each later `summary` event:       {show(to_summaries)}")


if __name__ == "__main__":
    asyncio.run(main())
