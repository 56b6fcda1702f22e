"""Local embedding speed: our numpy MiniLM side by side with sentence-transformers (PyTorch) on this machine.

    .venv/bin/python bench/embeddings.py --st-python /tmp/st-venv/bin/python

Workload: SciFact abstracts packed and cut into chunks of exactly 256 MiniLM tokens (the model's maximum),
embedded in one call; then one short query embedded at a time (latency). With ``--st-python`` (a Python
that has sentence-transformers and torch, see bench/make_minilm_reference.py) the same chunks and query go
through sentence-transformers in a subprocess, run after ours, and both figures are printed with their ratio
and the largest |cosine − 1| between the two implementations' vectors. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from almanac.rag.embeddings.minilm import MiniLMEmbedder, default_model_dir

CORPUS = Path("/work/shared/data/ir/scifact/corpus.jsonl")
QUERY = "how do I configure retries in httpx?"

_ST_SCRIPT = r"""
import json, sys, time
import numpy as np, torch
from sentence_transformers import SentenceTransformer
model_dir, chunks_path, batch_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
chunks = json.load(open(chunks_path))
model = SentenceTransformer(model_dir, device="cpu")
model.encode(chunks[:8], batch_size=batch_size)
print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
for line in sys.stdin:
    command, _, argument = line.strip().partition(" ")
    if command == "chunks":
        start = time.perf_counter()
        vectors = model.encode(chunks, batch_size=batch_size, normalize_embeddings=True)
        seconds = time.perf_counter() - start
        if argument:
            np.save(argument, vectors)
        print(json.dumps({"seconds": seconds}), flush=True)
    elif command == "query":
        latencies = []
        for _ in range(int(argument)):
            start = time.perf_counter()
            model.encode([sys.argv[4]], normalize_embeddings=True)
            latencies.append(time.perf_counter() - start)
        print(json.dumps({"latencies": latencies}), flush=True)
"""


def make_chunks(count: int, tokens: int, model_dir: Path, corpus: Path = CORPUS) -> list[str]:
    """`count` texts of exactly `tokens` MiniLM tokens ([CLS] and [SEP] included) cut from the corpus."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    chunks: list[str] = []
    pending = ""
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            document = json.loads(line)
            pending = f"{pending} {document['title']}. {document['text']}".strip()
            encoding = tokenizer.encode(pending, add_special_tokens=False)
            if len(encoding.ids) < tokens - 2:
                continue  # too short: pack the next abstract onto it
            candidate = pending[: encoding.offsets[tokens - 3][1]]
            if len(tokenizer.encode(candidate).ids) == tokens:
                chunks.append(candidate)
            pending = ""
            if len(chunks) == count:
                return chunks
    raise SystemExit(f"the corpus gave only {len(chunks)} chunks of {tokens} tokens")


class Ours:
    """Our numpy MiniLM, in this process."""

    def __init__(self, model_dir: Path, chunks: Sequence[str], batch_size: int) -> None:
        self.chunks, self.batch_size = list(chunks), batch_size
        self.embedder = MiniLMEmbedder(model_dir=model_dir, batch_size=batch_size)
        self.embedder.warm_up()
        self.embedder.encode(self.chunks[:8])
        self.label = f"ours (numpy {np.__version__})"

    def chunks_seconds(self) -> float:
        start = time.perf_counter()
        self.vectors = self.embedder.encode(self.chunks, batch_size=self.batch_size)
        return time.perf_counter() - start

    def query_latencies(self, runs: int) -> list[float]:
        latencies = []
        for _ in range(runs):
            start = time.perf_counter()
            self.embedder.encode([QUERY])
            latencies.append(time.perf_counter() - start)
        return latencies


class SentenceTransformers:
    """sentence-transformers in a subprocess running `_ST_SCRIPT`, driven one command per line."""

    def __init__(self, python: str, model_dir: Path, chunks: Sequence[str], batch_size: int, scratch: Path) -> None:
        (scratch / "chunks.json").write_text(json.dumps(list(chunks)), encoding="utf-8")
        self.vectors_path = scratch / "st.npy"
        self.process = subprocess.Popen(
            [python, "-c", _ST_SCRIPT, str(model_dir), str(scratch / "chunks.json"), str(batch_size), QUERY],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=(scratch / "st.log").open("w"),
            text=True,
            env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
        )
        hello = self._reply(scratch)
        self.label = f"sentence-transformers (torch {hello['torch']}, {hello['threads']} threads)"
        self.scratch = scratch

    def _reply(self, scratch: Path) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"sentence-transformers failed:\n{(scratch / 'st.log').read_text()[-2000:]}")
        return dict(json.loads(line))

    def _ask(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._reply(self.scratch)

    def chunks_seconds(self) -> float:
        return float(self._ask(f"chunks {self.vectors_path}")["seconds"])

    def query_latencies(self, runs: int) -> list[float]:
        return [float(x) for x in self._ask(f"query {runs}")["latencies"]]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--st-python", help="a python with sentence-transformers; omit to skip the comparison")
    parser.add_argument("--chunks", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="alternating timed rounds; each figure is the best")
    parser.add_argument("--query-runs", type=int, default=50, help="single-query encodes per round")
    args = parser.parse_args()

    model_dir = default_model_dir()
    chunks = make_chunks(args.chunks, args.tokens, model_dir)
    print(
        f"workload: {len(chunks)} chunks x {args.tokens} tokens (SciFact), batch {args.batch_size}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        runners: list[Ours | SentenceTransformers] = [Ours(model_dir, chunks, args.batch_size)]
        if args.st_python:
            runners.append(SentenceTransformers(args.st_python, model_dir, chunks, args.batch_size, Path(scratch)))
        seconds: dict[str, list[float]] = {runner.label: [] for runner in runners}
        latencies: dict[str, list[float]] = {runner.label: [] for runner in runners}
        for round_ in range(args.rounds):  # alternate, so that both meet the same background load
            for runner in runners if round_ % 2 == 0 else runners[::-1]:
                seconds[runner.label].append(runner.chunks_seconds())
                latencies[runner.label].extend(runner.query_latencies(args.query_runs))
        rates = {label: len(chunks) / min(values) for label, values in seconds.items()}
        p50s = {label: statistics.median(values) for label, values in latencies.items()}
        for label in rates:
            print(f"{label:55s} {rates[label]:7.2f} chunks/s   single query p50 {p50s[label] * 1e3:6.2f} ms")
        if len(runners) == 1:
            print("sentence-transformers: comparison skipped (pass --st-python PATH to run it)")
            return
        ours, theirs = runners[0], runners[1]
        assert isinstance(theirs, SentenceTransformers) and isinstance(ours, Ours)
        st_vectors = np.load(theirs.vectors_path)
        theirs.close()
    print(
        f"ratio ours/theirs: throughput {rates[ours.label] / rates[theirs.label]:.2f}x, "
        f"query latency {p50s[theirs.label] / p50s[ours.label]:.2f}x shorter"
    )
    cosines = np.sum(ours.vectors.astype(np.float64) * st_vectors, axis=1)
    print(f"max |cosine - 1| vs sentence-transformers over the chunks: {np.max(np.abs(cosines - 1.0)):.2e}")
    print(f"load average at the end {os.getloadavg()[0]:.1f} (other processes skew both figures)")


if __name__ == "__main__":
    main()
