"""Local embedding speed: our MiniLM on ONNX Runtime (new) and in numpy (old) side by side, optionally with
sentence-transformers (PyTorch), on this machine, plus each one's agreement with the reference vectors.

    .venv/bin/python bench/embeddings.py [--st-python /tmp/st-venv/bin/python] [--tokens 256]

Workload: SciFact abstracts packed and cut into chunks of exactly ``--tokens`` MiniLM tokens (256 is the
model's maximum), embedded in one call; then one short query embedded at a time (latency). Rounds alternate
between the runtimes so that both meet the same background load; each figure is the best round. With
``--st-python`` (a Python that has sentence-transformers and torch, see bench/make_minilm_reference.py) the
same chunks and query also go through sentence-transformers in a subprocess, and the largest |cosine − 1|
between its vectors and ours is printed. Accuracy: the lowest cosine of each runtime's vectors against
tests/fixtures/minilm_reference.json (sentence-transformers' own output), and between the two runtimes.
Prints figures; asserts nothing.
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

from almanac.rag.embeddings import onnx_bert
from almanac.rag.embeddings.minilm import MiniLMEmbedder, Runtime, default_model_dir

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "ir" / "scifact" / "corpus.jsonl"
REFERENCE = ROOT / "tests" / "fixtures" / "minilm_reference.json"
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
    """Our MiniLM on one runtime, in this process."""

    def __init__(self, model_dir: Path, chunks: Sequence[str], batch_size: int, runtime: Runtime) -> None:
        self.chunks, self.batch_size = list(chunks), batch_size
        self.embedder = MiniLMEmbedder(model_dir=model_dir, batch_size=batch_size, runtime=runtime)
        self.embedder.warm_up()
        self.embedder.encode(self.chunks[:8])
        if runtime == "numpy":
            self.label = f"old: numpy {np.__version__}"
        else:
            import onnxruntime

            self.label = f"new: ONNX Runtime {onnxruntime.__version__}"

    def reference_cosine(self) -> float:
        """The lowest cosine between our vectors and sentence-transformers' for the reference texts."""
        items = json.loads(REFERENCE.read_text(encoding="utf-8"))["items"]
        ours = self.embedder.encode([item["text"] for item in items])
        reference = np.asarray([item["embedding"] for item in items], dtype=np.float64)
        reference /= np.linalg.norm(reference, axis=1, keepdims=True)
        return float(np.min(np.sum(ours * reference, axis=1)))

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
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3, help="alternating timed rounds; each figure is the best")
    parser.add_argument("--query-runs", type=int, default=50, help="single-query encodes per round")
    args = parser.parse_args()

    model_dir = default_model_dir()
    chunks = make_chunks(args.chunks, args.tokens, model_dir)
    print(
        f"workload: {len(chunks)} chunks x {args.tokens} tokens (SciFact), batch {args.batch_size}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    runtimes: list[Runtime] = ["numpy", "onnxruntime"] if onnx_bert.available() else ["numpy"]
    ours = [Ours(model_dir, chunks, args.batch_size, runtime) for runtime in runtimes]
    with tempfile.TemporaryDirectory() as scratch:
        runners: list[Ours | SentenceTransformers] = list(ours)
        if args.st_python:
            runners.append(SentenceTransformers(args.st_python, model_dir, chunks, args.batch_size, Path(scratch)))
        seconds: dict[str, list[float]] = {runner.label: [] for runner in runners}
        latencies: dict[str, list[float]] = {runner.label: [] for runner in runners}
        for round_ in range(args.rounds):  # alternate, so that all meet the same background load
            for runner in runners if round_ % 2 == 0 else runners[::-1]:
                seconds[runner.label].append(runner.chunks_seconds())
                latencies[runner.label].extend(runner.query_latencies(args.query_runs))
        rates = {label: len(chunks) / min(values) for label, values in seconds.items()}
        p50s = {label: statistics.median(values) for label, values in latencies.items()}
        print("\n| runtime | chunks/s | tokens/s | one query p50 (ms) |\n|---|---|---|---|")
        for label in rates:
            print(f"| {label} | {rates[label]:.1f} | {rates[label] * args.tokens:,.0f} | {p50s[label] * 1e3:.2f} |")
        if len(ours) == 2:
            old, new = ours
            print(
                f"\nnew/old: throughput {rates[new.label] / rates[old.label]:.2f}x, "
                f"query latency {p50s[old.label] / p50s[new.label]:.2f}x shorter"
            )
            between = np.sum(old.vectors.astype(np.float64) * new.vectors, axis=1)
            print(f"lowest cosine between the two runtimes over the chunks: {between.min():.7f}")
        for runner in ours:
            print(
                f"lowest cosine to the sentence-transformers reference, {runner.label}: {runner.reference_cosine():.7f}"
            )
        theirs = next((r for r in runners if isinstance(r, SentenceTransformers)), None)
        if theirs is None:
            print("sentence-transformers: comparison skipped (pass --st-python PATH to run it)")
        else:
            st_vectors = np.load(theirs.vectors_path)
            theirs.close()
            for runner in ours:
                cosines = np.sum(runner.vectors.astype(np.float64) * st_vectors, axis=1)
                print(f"max |cosine - 1| vs sentence-transformers, {runner.label}: {np.max(np.abs(cosines - 1.0)):.2e}")
    print(f"load average at the end {os.getloadavg()[0]:.1f} (other processes skew every figure)")


if __name__ == "__main__":
    main()
