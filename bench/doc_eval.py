"""Documentation retrieval on real developer questions: does `retrieve_documentation` find the API asked for?

Reads `bench/doc_questions.jsonl` (or `--questions`: `bench/doc_questions_large_libraries.jsonl` asks about the APIs of
large libraries, `…_howto.jsonl` in full sentences as developers ask, `…_everyday.jsonl` and `…_tasks.jsonl` everyday
tasks, `…_wide.jsonl` 83 more across 52 libraries, put loosely, `…_independent.jsonl` 140 written by helpers that saw
neither this code nor the other sets (its `heldout` split never looked at); each line: question, expected fully
qualified APIs, library, source, split), builds the local index exactly as the product does (`build_local_index`:
installed distributions and the standard library of this interpreter) into a SQLite database under `--data` (reused
while its inputs are unchanged; embeddings are cached there too), and runs every question through the tool's own
pipeline offline (rule query parsing, rule library choice, fused order — `build_documentation` with no language model),
in the BM25 phase (no embedder); the reorder phase (LOCAL_DENSE=reorder, the service's default): BM25 candidates
reordered by MiniLM (`DenseReorder`), which embeds only the 40 candidates each question keeps, as the service does; the
fuse phase (LOCAL_DENSE=fuse: MiniLM over the whole index fused with BM25, the seed's way); the hybrid phase
(LOCAL_DENSE=both once the index is embedded: fused, then reordered). The last two embed the whole index first (half an
hour or more on 2 cores for 77,000 passages, kept in `--data`). A hit is a returned passage whose symbol (the last
heading of its title, `httpx.AsyncClient.__init__` counting as `httpx.AsyncClient`) is an expected API; an expected
`asyncio.gather` also matches `asyncio.tasks.gather` (same package and last name, the expected name's other parts in the
symbol in order: `sqlalchemy.orm.Session` matches `sqlalchemy.orm.session.Session`). Prints hits@6, hits@1 and MRR
overall, per split and per library, and the time a question took (an embedding cache that is empty or warm makes the
difference in the reorder phase).

    python bench/doc_eval.py [--phase bm25|reorder|fuse|hybrid|all] [--split dev|heldout|all] [--misses] [--only WORD]
                             [--model-apis P ...] [--library] [--framings] [--typos]

With `--library`, each question's library is passed as the tool's `library` argument (as a chat model calling the
tool names it: a search confined to that library) instead of being left to the question's words.

With `--framings`, each phase runs again for each of several ways a developer frames the same question ("What's the
best way to … in Python?", "I'm trying to … but I'm not sure which function to use", "pls help: …"; `FRAMINGS`): the
answer should not depend on them.

With `--typos`, each phase runs again with one longer word of each question misspelt (two letters swapped, one
dropped, one doubled; `misspelt`), as fast typing does.

With `--model-apis`, each phase runs again for each P with a simulated chat model that names the expected
API (`ParsedQuery.apis`) right with probability P and a wrong, real one otherwise (`KnowingParser`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
import time
import zlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from almanac.rag.embeddings.base import Embedder
from almanac.rag.embeddings.cache import CachedEmbedder
from almanac.rag.embeddings.minilm import MiniLMEmbedder
from almanac.rag.hybrid import HybridConfig
from almanac.rag.local_index import IndexInputs, LocalIndex, build_local_index, load_local_index
from almanac.rag.pipeline import DocRequest, DocumentationPipeline
from almanac.rag.python_reference import reference_dir
from almanac.rag.query import ParsedQuery, QueryParser, RuleQueryParser
from almanac.rag.ranking import same_api, symbol_of
from almanac.rag.rerank import DenseReorder, FusedOrder
from almanac.rag.select import RuleSelector
from almanac.rag.sources.local import LocalSource
from almanac.storage.db import Database
from almanac.storage.migrate import upgrade_async

QUESTIONS = Path(__file__).with_name("doc_questions.jsonl")
DEFAULT_DATA = Path(tempfile.gettempdir()) / "almanac-doc-eval"


@dataclass(frozen=True)
class Question:
    question: str
    expected: tuple[str, ...]
    library: str
    source: str
    split: str


# How developers frame a question around what they ask ("{task}": the question without its "How do I")
FRAMINGS = {
    "How can I …?": "How can I {task}?",
    "What's the best way to … in Python?": "What's the best way to {task} in Python?",
    "Is there a way to …?": "Is there a way to {task}?",
    "I want to …. What should I use?": "I want to {task}. What should I use?",
    "I'm trying to … but not sure which function": "I'm trying to {task} but I'm not sure which function to use",
    "pls help: …": "pls help: {task}",
    "Any idea how to …?": "Any idea how to {task}?",
    "Which function should I use to …?": "Which function should I use to {task}?",
    "easiest way to … in python 3": "easiest way to {task} in python 3",
    "In my project I have to …, how?": "In my project I have to {task}, how?",
    "HOW DO I … (in capitals)": "HOW DO I {TASK}",
    "a sentence of context first": "I'm writing a small script for work. I need to {task}.",
    "a sentence of venting after": "{Task}? I tried a few things but nothing worked.",
}


def framed(question: str, framing: str) -> str:
    """`question` put in one of `FRAMINGS`."""
    task = re.sub(r"^(?:how (?:do|can) i|how to)\s+", "", question.strip().rstrip("?"), flags=re.I)
    task = task[:1].lower() + task[1:]
    return FRAMINGS[framing].format(task=task, Task=task[:1].upper() + task[1:], TASK=task.upper())


# One word of five letters or more misspelt, as fast typing does (the word and place drawn from the question)
TYPOS = ("swapped", "dropped", "doubled")


def misspelt(question: str, typo: str) -> str:
    """`question` with one of its longer words misspelt: two letters `swapped`, one `dropped` or `doubled`."""
    words = [m for m in re.finditer(r"[A-Za-z]{5,}", question) if m.group().lower() not in _KEPT]
    if not words:
        return question
    draw = random.Random(zlib.crc32(question.encode()))
    word = draw.choice(words)
    text, at = word.group(), draw.randrange(1, len(word.group()) - 2)
    if typo == "swapped":
        text = text[:at] + text[at + 1] + text[at] + text[at + 2 :]
    elif typo == "dropped":
        text = text[:at] + text[at + 1 :]
    else:
        text = text[:at] + text[at] + text[at:]
    return question[: word.start()] + text + question[word.end() :]


_KEPT = frozenset({"python", "which", "there", "their", "about", "using", "where", "from", "with", "into", "that"})


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [Question(r["question"], tuple(r["expected"]), r["library"], r["source"], r["split"]) for r in rows]


def first_hit(symbols: Sequence[str], expected: Sequence[str]) -> int | None:
    """The 1-based rank of the first passage that documents an expected API."""
    for rank, symbol in enumerate(symbols, start=1):
        if any(same_api(symbol, wanted) for wanted in expected):
            return rank
    return None


async def local_index(data: Path, embeddings: bool, *, reuse: bool = False) -> tuple[LocalIndex, Embedder | None]:
    """The product's local index for this interpreter, built (or reused) in `data`/index.db: rebuilt when what it
    is built from or how (the index version) changed, which takes collecting the documents (a minute); with
    `reuse`, any index stored there is taken as it is."""
    await asyncio.to_thread(data.mkdir, parents=True, exist_ok=True)
    url = f"sqlite+aiosqlite:///{data / 'index.db'}"
    await upgrade_async(url)
    database = Database(url)
    embedder = CachedEmbedder(MiniLMEmbedder(), database) if embeddings else None
    started = time.monotonic()

    def progress(stage: str, done: int, total: int) -> None:
        if stage != "embedding chunks" or done % 4096 < 256 or done == total:
            print(f"  index: {stage} {done:,}/{total:,} ({time.monotonic() - started:.0f} s)", file=sys.stderr)

    current = await load_local_index(database) if reuse and not embeddings else None
    if current is None:
        # skipped when the stored index has the same inputs and model; a BM25 run reuses a hybrid index
        inputs = IndexInputs(python_docs=reference_dir())  # as the service's default PYTHON_DOCS_DIR=auto
        await build_local_index(database, inputs, embedder, progress=progress, store_lexical=True)
        current = await load_local_index(database)
    assert current is not None
    return current, embedder


class KnowingParser:
    """A chat model's query parsing, simulated: the rules' library and topic, and as the expected API the
    question's first expected API with probability `accuracy` — else another question's (a real API, wrong
    here), as a model that misremembers would. Deterministic per question."""

    def __init__(self, rules: QueryParser, questions: Sequence[Question], accuracy: float) -> None:
        self._rules = rules
        self._expected = {q.question: q.expected for q in questions}
        self._all = sorted({q.expected[0] for q in questions})
        self._accuracy = accuracy

    async def parse(self, query: str) -> ParsedQuery:
        parsed = await self._rules.parse(query)
        expected = self._expected.get(query, ())
        draw = random.Random(zlib.crc32(query.encode()))
        if expected and draw.random() < self._accuracy:
            return replace(parsed, apis=(expected[0],))
        wrong = [name for name in self._all if not any(same_api(name, e) for e in expected)]
        return replace(parsed, apis=(draw.choice(wrong),))


def pipeline_for(
    index: LocalIndex, embedder: Embedder | None, *, local_dense: str = "both", synonyms: bool = True
) -> DocumentationPipeline:
    """The tool's pipeline as `build_documentation` wires it without a language model or reranker key, for a
    LOCAL_DENSE mode: `both` (the default: hybrid search where the index has vectors, then the question's
    embedding reorders the candidates), `reorder` (lexical search, then the reorder) or `fuse` (hybrid search
    alone); no embedder, BM25 alone."""
    searches_dense = embedder is not None and local_dense in ("both", "fuse")
    local = LocalSource(index=lambda: index, embedder=embedder if searches_dense else None, config=HybridConfig())
    return DocumentationPipeline(
        source=local,
        fallback=None,
        parser=RuleQueryParser(local.names),
        selector=RuleSelector(),
        reranker=FusedOrder(),
        local_reorder=DenseReorder(embedder) if embedder is not None and local_dense != "fuse" else None,
        synonyms=synonyms,
    )


# phase → (LOCAL_DENSE mode, whether the whole index must be embedded first)
PHASES = {"bm25": (None, False), "reorder": ("reorder", False), "fuse": ("fuse", True), "hybrid": ("both", True)}


async def evaluate(
    pipeline: DocumentationPipeline,
    questions: Sequence[Question],
    *,
    misses: bool,
    library: bool = False,
    framing: str | None = None,
    typo: str | None = None,
) -> list[int | None]:
    """Each question's rank of the first expected API (None: not among those returned); with `library`, the
    question's library is passed as the tool's `library` argument, as a chat model calling the tool does; with
    `framing`, each question is asked in that framing (`FRAMINGS`); with `typo`, with a word misspelt so
    (`misspelt`)."""
    ranks = []
    started = time.perf_counter()
    for q in questions:
        asked = framed(q.question, framing) if framing else q.question
        asked = misspelt(asked, typo) if typo else asked
        result = await pipeline.run(DocRequest(asked, library=q.library if library else None))
        symbols = [symbol_of(p.chunk) for p in result.passages]
        rank = first_hit(symbols, q.expected)
        ranks.append(rank)
        if misses and rank != 1:
            print(f"  [{q.split}] rank {rank}: {asked!r} expected {list(q.expected)}")
            print(f"      library {result.library.id}, topic {result.topic!r}")
            for symbol in symbols:
                print(f"      - {symbol}")
    elapsed = time.perf_counter() - started
    each = 1000 * elapsed / max(1, len(questions))
    print(f"  {len(questions)} questions in {elapsed:.1f} s ({each:.0f} ms a question)")
    return ranks


def summary(ranks: Sequence[int | None]) -> str:
    n = len(ranks)
    if not n:
        return "no questions"
    at6 = sum(1 for r in ranks if r is not None)
    at1 = sum(1 for r in ranks if r == 1)
    mrr = sum(1.0 / r for r in ranks if r is not None) / n
    return f"hits@6 {at6}/{n} ({at6 / n:.0%})  hits@1 {at1}/{n} ({at1 / n:.0%})  MRR {mrr:.3f}"


def report(phase: str, questions: Sequence[Question], ranks: Sequence[int | None], per_library: bool) -> None:
    print(f"\n== {phase} ==")
    print(f"all      {summary(ranks)}")
    by_split: dict[str, list[int | None]] = defaultdict(list)
    by_library: dict[str, list[int | None]] = defaultdict(list)
    for q, rank in zip(questions, ranks, strict=True):
        by_split[q.split].append(rank)
        by_library[q.library].append(rank)
    for split in sorted(by_split):
        print(f"{split:<8} {summary(by_split[split])}")
    if per_library:
        for library in sorted(by_library):
            print(f"  {library:<18} {summary(by_library[library])}")


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--phase", default="bm25", choices=[*PHASES, "all"])
    parser.add_argument("--split", default="all", choices=["dev", "heldout", "all"])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="where the index database is kept")
    parser.add_argument("--misses", action="store_true", help="print every question not answered first")
    parser.add_argument("--only", default=None, help="only questions containing this text")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="the questions (JSON lines)")
    parser.add_argument("--no-libraries", action="store_true", help="leave out the per-library lines")
    parser.add_argument(
        "--reuse-index",
        action="store_true",
        help="take the index stored in --data as it is, without checking that this code would build the same",
    )
    parser.add_argument(
        "--no-synonyms",
        action="store_true",
        help="search the question's words alone, without the documentation's words for them (RAG_SYNONYMS=false)",
    )
    parser.add_argument(
        "--library",
        action="store_true",
        help="pass each question's library as the tool's `library` argument, as a chat model calling it does",
    )
    parser.add_argument(
        "--framings",
        action="store_true",
        help="also run each phase with the questions framed as developers frame them (FRAMINGS)",
    )
    parser.add_argument(
        "--typos",
        action="store_true",
        help="also run each phase with one word of each question misspelt (swapped, dropped, doubled letters)",
    )
    parser.add_argument(
        "--model-apis",
        type=float,
        nargs="*",
        default=None,
        metavar="P",
        help="also run each phase with a simulated chat model naming the expected API with probability P",
    )
    args = parser.parse_args(argv)
    questions = [q for q in load_questions(args.questions) if args.split == "all" or q.split == args.split]
    if args.only:
        questions = [q for q in questions if args.only.lower() in q.question.lower()]
    phases = list(PHASES) if args.phase == "all" else [args.phase]
    embeds = any(PHASES[phase][1] for phase in phases)
    index, embedder = await local_index(args.data, embeddings=embeds, reuse=args.reuse_index)
    if embedder is None and "reorder" in phases:  # the vectors of the candidates only: each question embeds its own 40
        url = f"sqlite+aiosqlite:///{args.data / 'index.db'}"
        embedder = CachedEmbedder(MiniLMEmbedder(), Database(url))
    print(f"{len(questions)} questions, index of {len(index.chunks):,} chunks from {len(index.libraries)} libraries")
    for phase in phases:
        mode, _ = PHASES[phase]
        pipeline = pipeline_for(
            index, embedder if mode else None, local_dense=mode or "fuse", synonyms=not args.no_synonyms
        )
        ranks = await evaluate(pipeline, questions, misses=args.misses, library=args.library)
        report(phase, questions, ranks, per_library=not args.no_libraries)
        for framing in FRAMINGS if args.framings else ():
            ranks = await evaluate(pipeline, questions, misses=False, library=args.library, framing=framing)
            report(f"{phase}, asked as {framing!r}", questions, ranks, False)
        for typo in TYPOS if args.typos else ():
            ranks = await evaluate(pipeline, questions, misses=False, library=args.library, typo=typo)
            report(f"{phase}, one word's letters {typo}", questions, ranks, False)
        rules = pipeline.parser
        for accuracy in args.model_apis or ():
            pipeline.parser = KnowingParser(rules, questions, accuracy)
            ranks = await evaluate(pipeline, questions, misses=False, library=args.library)
            report(f"{phase}, a model naming the API right {accuracy:.0%} of the time", questions, ranks, False)


if __name__ == "__main__":
    asyncio.run(main())
