"""Does reranking by the chat model pay for its tokens? The fused order against `ModelReranker` on the
documentation questions (`bench/doc_questions.jsonl`: question, expected APIs, split), with FAKE judges
whose judgement follows a known rule, and, given an OpenAI-compatible server, a REAL model:

- `oracle p`: knows which passages document an expected API, and is right about each passage with
  probability p (a wrong judgement flips it); relevant passages score 7–10, others 0–5, at random;
- `keywords`: scores a passage by the share of the question's words it contains (a judge no wiser
  than BM25);
- `model NAME` (with `--openai-base-url` and `--openai-model`): the model behind that server (llama.cpp,
  Ollama, vLLM, OpenAI…) judges, through the product's own OpenAI-compatible provider; its row also says
  how many calls kept the fused order (an error, a timeout or no usable scores) and how long a call took.

The fake judges say how good a model's judgement must be for the rerank to help, and what it costs. Each
question goes through the tool's own pipeline offline, as `bench/doc_eval.py` runs it (the same index in
`--data`, rule parsing, rule library choice, the BM25 phase) with the 30 ranked candidates kept; the
reranker then scores them as in production (first `RERANK_MAX_CANDIDATES` of them, each cut to
`RERANK_PASSAGE_CHARS`). A hit is a returned passage (of 6) whose API — the name in the last heading of
its title, a constructor counting as its class — is an expected one (same package and last name, its other
parts in order, also counts).
Prints hits@6, hits@1, MRR, and the tokens one rerank call costs.

    python bench/rerank_llm.py [--split dev|heldout|all] [--data DIR] [--seed 7]
                               [--openai-base-url http://127.0.0.1:8081/v1 --openai-model NAME [--timeout S]]
                               [--model-apis P]

With `--model-apis P` the query parsing is a simulated chat model's that also names the expected API with
probability P (as `bench/doc_eval.py --model-apis`), so the two uses of a chat model are measured together.

A real small model, as `make real-model-check` installs it (docs/development.md):

    .venv-real/bin/python -m llama_cpp.server --model <SmolLM2-135M-Instruct.Q4_1.gguf> --n_ctx 8192 \
        --port 8081 --model_alias smollm2 &
    python bench/rerank_llm.py --split dev --openai-base-url http://127.0.0.1:8081/v1 --openai-model smollm2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

from almanac.llm.base import Model, ModelUnavailable
from almanac.llm.events import ModelEvent
from almanac.llm.fake import ScriptedModel, events_of, reply
from almanac.llm.messages import ModelRequest
from almanac.llm.providers.openai_compat import OpenAICompatModel
from almanac.rag.pipeline import DocRequest
from almanac.rag.ranking import symbol_of
from almanac.rag.rerank import DEFAULT_MAX_CANDIDATES, DEFAULT_PASSAGE_CHARS, ModelReranker, Reranker
from doc_eval import DEFAULT_DATA, QUESTIONS, KnowingParser, first_hit, load_questions, local_index, pipeline_for

TOP_K = 6
CANDIDATES = 30
_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)
_WORD = re.compile(r"[a-z0-9]+")


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


class Replay:
    """Wraps a real model: `stream` asks it and keeps the answer; `replay` plays the kept answer back for
    the same prompt (and fails for another), so that two rerankers judge from one real call."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.provider, self.name = model.provider, model.name
        self.supports_tools, self.supports_streaming = False, True
        self._kept: tuple[str, list[ModelEvent]] | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self._kept = None
        events = [event async for event in self.model.stream(request)]
        self._kept = (request.messages[0].text, events)
        for event in events:
            yield event

    def replay(self) -> Model:
        async def answer(request: ModelRequest) -> AsyncIterator[ModelEvent]:
            if self._kept is None or self._kept[0] != request.messages[0].text:
                raise ModelUnavailable("the real call for this prompt failed")
            for event in self._kept[1]:
                yield event

        return ScriptedModel(default=answer, name=self.name)


class KeptOrder(logging.Handler):
    """Counts the reranker's warnings that it kept the fused order (an error, a timeout, no usable scores)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += "keeping the fused order" in record.getMessage()


def summary(ranks: Sequence[int | None]) -> str:
    n = len(ranks)
    at6 = sum(r is not None for r in ranks)
    at1 = sum(r == 1 for r in ranks)
    mrr = sum(1 / r for r in ranks if r is not None) / max(1, n)
    return f"| {at6}/{n} ({at6 / n:.0%}) | {at1}/{n} ({at1 / n:.0%}) | {mrr:.3f} |"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--split", default="all", choices=["dev", "heldout", "all"])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="where the index database is kept")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--openai-base-url", default=None, help="an OpenAI-compatible server whose model judges")
    parser.add_argument("--openai-model", default=None, help="the model (or alias) that server serves")
    parser.add_argument("--timeout", type=float, default=None, help="seconds a real judge's call may take")
    parser.add_argument(
        "--model-apis",
        type=float,
        default=None,
        metavar="P",
        help="a simulated chat model also names the expected API with probability P (doc_eval's KnowingParser)",
    )
    args = parser.parse_args()
    questions = [q for q in load_questions(args.questions) if args.split == "all" or q.split == args.split]
    index, _ = await local_index(args.data, embeddings=False)
    pipeline = pipeline_for(index, None)
    pipeline.top_k = CANDIDATES  # every ranked candidate goes to the rerankers below
    if args.model_apis is not None:
        pipeline.parser = KnowingParser(pipeline.parser, questions, args.model_apis)
    judge = Judge()
    reranker: Reranker = ModelReranker(judge.model)
    rng = random.Random(args.seed)

    def oracle_of(accuracy: float) -> Callable[[str, set[int]], Callable[[int, str], float]]:
        return lambda question, relevant: oracle(relevant, accuracy, rng)

    judges: dict[str, Callable[[str, set[int]], Callable[[int, str], float]]] = {
        **{f"oracle {p:.0%}": oracle_of(p) for p in (1.0, 0.9, 0.8, 0.7, 0.6)},
        "keywords": lambda question, relevant: keywords(question),
    }
    real: ModelReranker | None = None
    alone: ModelReranker | None = None  # the same answers, ordered by the model's scores alone (the seed's way)
    if args.openai_base_url and args.openai_model:
        recorded = Replay(OpenAICompatModel(model=args.openai_model, base_url=args.openai_base_url, max_retries=0))
        timeout = {} if args.timeout is None else {"timeout_s": args.timeout}
        real = ModelReranker(recorded, **timeout)
        alone = ModelReranker(recorded.replay(), fused_weight=0.0)
    kept = KeptOrder()
    logging.getLogger("almanac.rag.rerank").addHandler(kept)
    ranks: dict[str, list[int | None]] = {"fused order": [], **{name: [] for name in judges}}
    real_name = f"model {args.openai_model}"
    if real is not None:
        ranks[real_name] = []
        ranks[f"{real_name}, its scores alone"] = []
    prompt_chars: list[int] = []
    real_seconds: list[float] = []
    for q in questions:
        result = await pipeline.run(DocRequest(q.question))
        chunks = [passage.chunk for passage in result.passages]
        apis = [symbol_of(chunk) for chunk in chunks]
        ranks["fused order"].append(first_hit(apis[:TOP_K], q.expected))
        relevant = {i for i, api in enumerate(apis) if first_hit([api], q.expected)}
        fused = [passage.score for passage in result.passages]
        texts = [c.text for c in chunks]
        for name, make in judges.items():
            judge.rule = make(q.question, relevant)
            hits = await reranker.rerank(q.question, texts, TOP_K, fused=fused)
            ranks[name].append(first_hit([apis[hit.index] for hit in hits], q.expected))
        if chunks:
            prompt_chars.append(judge.prompt_chars)
        if real is not None and alone is not None:
            started, before = time.perf_counter(), kept.count
            hits = await real.rerank(q.question, texts, TOP_K, fused=fused)
            real_seconds.append(time.perf_counter() - started)
            ranks[real_name].append(first_hit([apis[hit.index] for hit in hits], q.expected))
            hits = await alone.rerank(q.question, texts, TOP_K, fused=fused)
            ranks[f"{real_name}, its scores alone"].append(first_hit([apis[hit.index] for hit in hits], q.expected))
            kept.count = before + (kept.count > before)  # one real call, however many rerankers read it
    print(
        f"{len(questions)} questions ({args.split}); index of {len(index.chunks):,} chunks; rerank of the first "
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
    if real is not None and real_seconds:
        ordered = sorted(real_seconds)
        print(
            f"{real_name}: kept the fused order in {kept.count} of {len(real_seconds)} calls (error, timeout or no "
            f"usable scores); a call took {sum(ordered) / len(ordered):.1f} s on average, "
            f"{ordered[len(ordered) // 2]:.1f} s median, {ordered[-1]:.1f} s at most."
        )


if __name__ == "__main__":
    asyncio.run(main())
