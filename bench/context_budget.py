"""Tokens sent per query across a long conversation: every model call is assembled within the
model's context window, so what is sent levels off instead of growing with the conversation.

Each query asks a ~1,500-character question, calls one tool that returns ~5,000 characters and
ends with a ~3,000-character answer, through the real chat service on a SQLite file (extractive
summaries, the embedded default). For each window, the table shows the tokens of the first model
call of a query (our estimate, the one the budget uses; system prompt and tools included) next to
what the whole summarised history would have taken without a budget.

    python bench/context_budget.py [--queries 200] [--windows 8000,32000,200000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from almanac.chat.service import collect
from almanac.config import Settings
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.main import build_services
from almanac.memory.context import QueryPrompt, Window, assemble
from almanac.storage.migrate import upgrade_async
from memory_tokens import SearchTool, passages, take

ROOT = Path(__file__).resolve().parents[1]
SHOWN = (1, 2, 5, 10, 25, 50, 100, 150, 200)


async def run(queries: int, window_tokens: int, data: Path) -> tuple[dict[int, int], dict[int, int], float]:
    source = passages(data)
    url = f"sqlite+aiosqlite:///{Path(tempfile.mkdtemp()) / 'bench.db'}"
    await upgrade_async(url)
    model = ScriptedModel()
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=url, local_user=False, model_context_tokens=window_tokens, max_query_credits=0
    )
    services = build_services(settings, model=model)
    services.registry.register(SearchTool(source))
    user = (await services.accounts.create_user(email="bench@example.com")).user
    await services.credits.grant_pack(user_id=user.id, amount=100_000, reason="bench")
    chat = services.chat
    sent: dict[int, int] = {}
    unbounded: dict[int, int] = {}
    conversation: str | None = None
    started = time.perf_counter()
    for number in range(1, queries + 1):
        model.enqueue(calls(call("search_docs", {"query": f"question {number}"})), reply(take(source, 3000)))
        question = f"Question {number}: " + take(source, 1500)
        calls_before = len(model.requests)
        result = await chat.start(user=user, message=question, conversation_id=conversation)
        await collect(result)
        conversation = result.conversation_id
        first = model.requests[calls_before]
        counter = chat.counter
        sent[number] = (
            counter.count(first.system) + counter.count_tools(first.tools) + counter.count_messages(first.messages)
        )
        if number in SHOWN or number == queries:
            items = await services.history.items(user_id=user.id, conversation_id=conversation)
            everything = QueryPrompt(items, number, question, Window(10**9, 10**9, 10**9), counter)
            unbounded[number] = assemble(everything, system=first.system, tools=first.tools).tokens
    elapsed = time.perf_counter() - started
    await services.summaries.drain(timeout_s=10)
    await services.database.dispose()
    return sent, unbounded, elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--windows", default="8000,32000,200000")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "ir")
    args = parser.parse_args()
    windows = [int(part) for part in args.windows.split(",")]
    results = {window: await run(args.queries, window, args.data) for window in windows}
    print(f"Tokens sent on the first model call of query N ({args.queries} queries; estimated tokens)\n")
    header = " | ".join(f"window {w:,}: sent / without budget" for w in windows)
    print(f"| query | {header} |")
    print("|---|" + "---|" * len(windows))
    for number in [n for n in SHOWN if n <= args.queries]:
        cells = " | ".join(f"{results[w][0][number]:,} / {results[w][1][number]:,}" for w in windows)
        print(f"| {number} | {cells} |")
    print()
    for window in windows:
        sent, _, elapsed = results[window]
        budget = Window.for_model(context_tokens=window, max_output_tokens=4096, tool_result_tokens=6000)
        print(
            f"window {window:,}: prompt budget {budget.prompt_tokens:,}; max sent {max(sent.values()):,}; "
            f"mean over the last 50 queries {sum(list(sent.values())[-50:]) // min(50, len(sent)):,}; "
            f"{args.queries} queries in {elapsed:.1f} s"
        )


if __name__ == "__main__":
    asyncio.run(main())
