"""Per-run cost of the code sandbox: the median wall time of a trivial program (Python `pass`, bash
`true`), from asking for a run to having its outcome, for this checkout and a baseline commit
(default: where this branch left `main`), side by side in one run.

Each variant is a worker process importing its own copy of `almanac.tools.sandbox`; the runs are
interleaved (one of each variant in turn) so that the machine's load falls on all alike. Variants:
  * baseline — the sandbox as of the baseline commit;
  * current — this checkout, every protection the host offers (tmpfs sizes, filter, cgroup…);
  * current, no cgroup — the same without the per-run cgroup (what hosts without one pay).

    python bench/sandbox_overhead.py [--runs 40] [--baseline REF]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = {"python": "pass", "bash": "true"}

WORKER = """
import asyncio, inspect, json, sys, time
from almanac.tools.sandbox import Limits, Sandbox, SandboxConfig

async def main(cgroups):
    options = {"cgroups": cgroups} if "cgroups" in inspect.signature(SandboxConfig).parameters else {}
    box = Sandbox(SandboxConfig(Limits(timeout_s=20), **options))
    problem = await box.check()
    print(json.dumps({"problem": problem}), flush=True)
    for line in sys.stdin:
        language, code = json.loads(line)
        started = time.perf_counter()
        async with box.run_dir(language, code) as run:
            outcome = await box.execute(run, language=language)
        elapsed = time.perf_counter() - started
        print(json.dumps({"seconds": elapsed, "exit": outcome.returncode}), flush=True)
    box.close()

asyncio.run(main(sys.argv[1] == "1"))
"""


def baseline_backend(ref: str, into: Path) -> Path:
    """The baseline commit's backend/ folder, unpacked into `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "backend"], capture_output=True, check=True)
    path = into / "archive.tar"
    path.write_bytes(archive.stdout)
    with tarfile.open(path) as tar:
        tar.extractall(into, filter="data")
    return into / "backend"


class Worker:
    def __init__(self, name: str, backend: Path, *, cgroups: bool) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": str(backend), "PYTHONDONTWRITEBYTECODE": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, "1" if cgroups else "0"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd="/",
        )
        self.times: dict[str, list[float]] = {language: [] for language in PROGRAMS}
        problem = json.loads(self._line())["problem"]
        if problem is not None:
            raise SystemExit(f"{name}: the sandbox cannot run here: {problem}")

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"{self.name}: the worker ended")
        return line

    def run(self, language: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps([language, PROGRAMS[language]]) + "\n")
        self.process.stdin.flush()
        result = json.loads(self._line())
        if result["exit"] != 0:
            raise SystemExit(f"{self.name}: {language} exited with {result['exit']}")
        self.times[language].append(result["seconds"])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def default_baseline() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit("no `main` branch to compare with: pass --baseline REF")
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40, help="runs per language and variant")
    parser.add_argument("--baseline", help="git commit to compare with (default: merge-base with main)")
    args = parser.parse_args()
    ref = args.baseline or default_baseline()
    with tempfile.TemporaryDirectory() as folder:
        old = baseline_backend(ref, Path(folder))
        workers = [
            Worker(f"baseline ({ref[:10]})", old, cgroups=True),
            Worker("current", ROOT / "backend", cgroups=True),
            Worker("current, no cgroup", ROOT / "backend", cgroups=False),
        ]
        try:
            for _ in range(2):  # warm-up, not counted
                for worker in workers:
                    for language in PROGRAMS:
                        worker.run(language)
                        worker.times[language].clear()
            for _ in range(args.runs):
                for language in PROGRAMS:
                    for worker in workers:
                        worker.run(language)
        finally:
            for worker in workers:
                worker.close()
    print(f"median wall time of one trivial run, {args.runs} runs each (ms)")
    print(f"{'variant':<28}" + "".join(f"{language:>18}" for language in PROGRAMS))
    base = {language: statistics.median(workers[0].times[language]) for language in PROGRAMS}
    for worker in workers:
        cells = []
        for language in PROGRAMS:
            median = statistics.median(worker.times[language])
            cells.append(f"{median * 1000:8.1f}{'' if worker is workers[0] else f' ({median / base[language]:.2f}x)'}")
        print(f"{worker.name:<28}" + "".join(f"{cell:>18}" for cell in cells))


if __name__ == "__main__":
    main()
