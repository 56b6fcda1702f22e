"""Does reranking by the chat model pay for its tokens? The fused order against `ModelReranker` on the
documentation questions (`bench/doc_questions.jsonl`: question, expected APIs, split), with FAKE judges
whose judgement follows a known rule — there is no real model here, so the figures say how good a
model's judgement must be for the rerank to help, and what it costs:

- `oracle p`: knows which passages document an expected API, and is right about each passage with
  probability p (a wrong judgement flips it); relevant passages score 7–10, others 0–5, at random;
- `keywords`: scores a passage by the share of the question's words it contains (a judge no wiser
  than BM25).

Each question goes through the tool's own pipeline offline (rule parsing, rule library choice, BM25
over the product's local index) with the 30 fused candidates kept; the reranker then scores them as in
production (first `RERANK_MAX_CANDIDATES` of them, each cut to `RERANK_PASSAGE_CHARS`). A hit is a
returned passage (of 6) whose API — the name in the last heading of its title, a constructor counting
as its class — is an expected one (same package and tail also counts). Prints hits@6, hits@1, MRR, and
the tokens one rerank call costs.

    python bench/rerank_llm.py [--questions bench/doc_questions.jsonl] [--data DIR] [--seed 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

from almanac.llm.events import ModelEvent
from almanac.llm.fake import ScriptedModel, events_of, reply
from almanac.llm.messages import ModelRequest
from almanac.rag.chunking import Chunk
from almanac.rag.hybrid import HybridConfig
from almanac.rag.local_index import IndexInputs, build_local_index, load_local_index
from almanac.rag.pipeline import DocRequest, DocumentationPipeline
from almanac.rag.query import RuleQueryParser
from almanac.rag.rerank import DEFAULT_MAX_CANDIDATES, DEFAULT_PASSAGE_CHARS, FusedOrder, ModelReranker, Reranker
from almanac.rag.select import RuleSelector
from almanac.rag.sources.local import LocalSource
from almanac.storage.db import Database
from almanac.storage.migrate import upgrade_async

TOP_K = 6
CANDIDATES = 30
_NAME = re.compile(r"`(?:class |async )*([A-Za-z_][\w.]*)")
_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)
_WORD = re.compile(r"[a-z0-9]+")


def api_of(chunk: Chunk) -> str:
    found = _NAME.search(chunk.title.rsplit(" > ", 1)[-1])
    return found.group(1).removesuffix(".__init__") if found else ""


def is_expected(api: str, expected: Sequence[str]) -> bool:
    for wanted in expected:
        top, _, tail = wanted.partition(".")
        if api == wanted or (tail and api.split(".", 1)[0] == top and api.endswith("." + tail)):
            return True
    return False


class Judge:
    """A fake chat model that scores the passages of a rerank prompt by `rule(index, text)` (0–10)."""

    def __init__(self) -> None:
        self.rule: Callable[[int, str], float] = lambda index, text: 0.0
        self.prompt_chars = 0
        self.answer_tokens = 0
        self.model = ScriptedModel(default=self._answer)

    async def _answer(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        prompt = request.messages[0].text
        self.prompt_chars = len(request.system) + len(prompt)
        self.answer_tokens = request.max_tokens
        scores = [{"id": int(i), "score": round(self.rule(int(i), text), 1)} for i, text in _PASSAGE.findall(prompt)]
        for event in events_of(reply(json.dumps(scores))):
            yield event


def oracle(relevant: set[int], accuracy: float, rng: random.Random) -> Callable[[int, str], float]:
    def rule(index: int, text: str) -> float:
        judged = (index in relevant) if rng.random() < accuracy else (index not in relevant)
        return rng.uniform(7, 10) if judged else rng.uniform(0, 5)

    return rule


def keywords(question: str) -> Callable[[int, str], float]:
    words = set(_WORD.findall(question.lower()))

    def rule(index: int, text: str) -> float:
        return 10.0 * len(words & set(_WORD.findall(text.lower()))) / max(1, len(words))

    return rule


def first_rank(apis: Sequence[str], expected: Sequence[str]) -> int | None:
    return next((rank for rank, api in enumerate(apis, 1) if is_expected(api, expected)), None)


def summary(ranks: Sequence[int | None]) -> str:
    n = len(ranks)
    at6 = sum(r is not None for r in ranks)
    at1 = sum(r == 1 for r in ranks)
    mrr = sum(1 / r for r in ranks if r is not None) / max(1, n)
    return f"| {at6}/{n} ({at6 / n:.0%}) | {at1}/{n} ({at1 / n:.0%}) | {mrr:.3f} |"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=Path(__file__).with_name("doc_questions.jsonl"))
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "almanac-rerank-llm")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    questions = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    args.data.mkdir(parents=True, exist_ok=True)
    url = f"sqlite+aiosqlite:///{args.data / 'index.db'}"
    await upgrade_async(url)
    database = Database(url)
    await build_local_index(database, IndexInputs(), None)  # skipped while its inputs are unchanged
    index = await load_local_index(database)
    assert index is not None
    local = LocalSource(index=lambda: index, embedder=None, config=HybridConfig())
    pipeline = DocumentationPipeline(
        source=local,
        fallback=None,
        parser=RuleQueryParser(local.names),
        selector=RuleSelector(),
        reranker=FusedOrder(),
        top_k=CANDIDATES,
        candidates=CANDIDATES,
    )
    judge = Judge()
    reranker: Reranker = ModelReranker(judge.model)
    rng = random.Random(args.seed)

    def oracle_of(accuracy: float) -> Callable[[str, set[int]], Callable[[int, str], float]]:
        return lambda question, relevant: oracle(relevant, accuracy, rng)

    judges: dict[str, Callable[[str, set[int]], Callable[[int, str], float]]] = {
        **{f"oracle {p:.0%}": oracle_of(p) for p in (1.0, 0.9, 0.8, 0.7, 0.6)},
        "keywords": lambda question, relevant: keywords(question),
    }
    ranks: dict[str, list[int | None]] = {"fused order": [], **{name: [] for name in judges}}
    prompt_chars: list[int] = []
    for q in questions:
        result = await pipeline.run(DocRequest(q["question"]))
        chunks = [passage.chunk for passage in result.passages]
        apis = [api_of(chunk) for chunk in chunks]
        ranks["fused order"].append(first_rank(apis[:TOP_K], q["expected"]))
        relevant = {i for i, api in enumerate(apis) if is_expected(api, q["expected"])}
        fused = [passage.score for passage in result.passages]
        for name, make in judges.items():
            judge.rule = make(q["question"], relevant)
            hits = await reranker.rerank(q["question"], [c.text for c in chunks], TOP_K, fused=fused)
            ranks[name].append(first_rank([apis[hit.index] for hit in hits], q["expected"]))
        if chunks:
            prompt_chars.append(judge.prompt_chars)
    print(
        f"{len(questions)} questions; index of {len(index.chunks):,} chunks; rerank of the first "
        f"{DEFAULT_MAX_CANDIDATES} of {CANDIDATES} candidates cut to {DEFAULT_PASSAGE_CHARS} characters\n"
    )
    print("| ranking | hits@6 | hits@1 | MRR |\n|---|---|---|---|")
    for name, found in ranks.items():
        print(f"| {name} {summary(found)}")
    mean = sum(prompt_chars) / max(1, len(prompt_chars))
    print(
        f"\nOne rerank call: about {mean / 4:,.0f} input tokens (mean {mean:,.0f} characters / 4) and at most "
        f"{judge.answer_tokens} output tokens, per documentation question."
    )
    await database.dispose()


if __name__ == "__main__":
    asyncio.run(main())
