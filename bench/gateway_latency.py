"""What the gateway adds: the same fake OpenAI-compatible upstream called directly and through
`almanac serve`'s /v1/messages, side by side in one run, for 1 worker and for N (`--workers`).

Three kinds of processes share the machine: the fake upstream (`bench/gateway_upstream.py`, a bare
ASGI app on uvloop + httptools in a process of its own; it answers from canned bytes, and the direct
runs show its capacity — several times what the gateway asks of it), `almanac serve` (SQLite, usage
recorded per request, LOG_LEVEL=WARNING so uvicorn writes no access log), and this client (aiohttp,
keep-alive). Each configuration runs the direct path and then the gateway: at 1 client (sequential)
the added p50/p99 latency and the gateway's CPU per request (user + system CPU time of the server
process and its workers, from psutil), at 50 concurrent clients the requests per second and p50/p99
of both and their ratios. Non-streaming requests time the whole response, streaming ones the first
text token.

    python bench/gateway_latency.py [--workers 1 2] [--requests 3000] [--single 400] [--chunks 8]
                                    [--rounds 3] [--gateway-root PATH]

`--gateway-root` serves the gateway from another checkout's `backend/` (say, `main` in a temporary
`git worktree`) with this environment, for before/after figures from the same script.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import psutil

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Summarise the plot of Hamlet in two sentences."


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(url: str, timeout: float = 90) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except Exception:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


@dataclass
class Run:
    latencies: list[float]  # seconds: whole response (JSON) or first text token (SSE)
    wall_s: float
    cpu_s: float | None = None  # the gateway's (server and workers)
    path_cpu_s: float = 0.0  # every process on the request's path: this client, the gateway (if any), the upstream

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.wall_s


async def one(session: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str], stream: bool) -> float:
    started = time.perf_counter()
    async with session.post(url, data=body, headers=headers) as response:
        if response.status != 200:
            raise RuntimeError(f"{url}: HTTP {response.status}: {(await response.text())[:200]}")
        if not stream:
            await response.read()
            return time.perf_counter() - started
        first: float | None = None
        async for line in response.content:
            if first is None and (b"text_delta" in line or _has_text(line)):
                first = time.perf_counter() - started
        assert first is not None, "no text arrived"
        return first


def _has_text(line: bytes) -> bool:
    """Whether an OpenAI SSE line carries non-empty text content."""
    return any(marker in line and marker + b'"' not in line for marker in (b'"content":"', b'"content": "'))


def tree_cpu(processes: list[psutil.Process]) -> float:
    """User + system CPU seconds of the given processes (those that ended meanwhile are skipped)."""
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def server_processes(pid: int) -> list[psutil.Process]:
    """`almanac serve` and its workers (not the resource tracker, which does no work)."""
    parent = psutil.Process(pid)
    return [parent, *parent.children()]


UPSTREAM: list[psutil.Process] = []  # the fake upstream's process, once started


async def run(
    url: str, body: bytes, headers: dict[str, str], *, stream: bool, clients: int, total: int, pid: int | None
) -> Run:
    connector = aiohttp.TCPConnector(limit=clients, force_close=False)
    async with aiohttp.ClientSession(connector=connector) as session:
        for _ in range(min(50, total)):  # warm the pools
            await one(session, url, body, headers, stream)
        latencies: list[float] = []
        queue = iter(range(total))

        async def worker() -> None:
            for _ in queue:
                latencies.append(await one(session, url, body, headers, stream))

        processes = server_processes(pid) if pid else []
        others = [psutil.Process(), *UPSTREAM]
        cpu_before, others_before = tree_cpu(processes), tree_cpu(others)
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - started
        cpu = tree_cpu(processes) - cpu_before
        path = cpu + tree_cpu(others) - others_before
    return Run(latencies, wall, cpu if pid else None, path)


def bodies(stream: bool) -> tuple[bytes, bytes]:
    anthropic = {"model": "claude-sonnet-4-6", "max_tokens": 256, "messages": [{"role": "user", "content": PROMPT}]}
    openai = {"model": "gpt-4o", "max_tokens": 256, "messages": [{"role": "user", "content": PROMPT}]}
    if stream:
        anthropic["stream"] = True
        openai.update(stream=True, stream_options={"include_usage": True})
    return json.dumps(anthropic).encode(), json.dumps(openai).encode()


async def measure(
    args: argparse.Namespace, upstream: str, gateway: str, key: str, pid: int, workers: int
) -> list[list[str]]:
    """Each configuration `args.rounds` times, direct and through the gateway in turn; every figure
    is the median over the rounds (the machine is shared, so single runs are noisy)."""
    rows = []
    direct_headers = {"content-type": "application/json", "authorization": "Bearer bench"}
    gateway_headers = {"content-type": "application/json", "x-api-key": key, "anthropic-version": "2023-06-01"}
    for stream in (False, True):
        gateway_body, direct_body = bodies(stream)
        for clients in (1, 50):
            total = args.single if clients == 1 else args.requests
            figures: list[tuple[float, ...]] = []
            for _ in range(args.rounds):
                direct = await run(
                    f"{upstream}/v1/chat/completions",
                    direct_body,
                    direct_headers,
                    stream=stream,
                    clients=clients,
                    total=total,
                    pid=None,
                )
                through = await run(
                    f"{gateway}/v1/messages",
                    gateway_body,
                    gateway_headers,
                    stream=stream,
                    clients=clients,
                    total=total,
                    pid=pid,
                )
                figures.append(
                    (
                        direct.pct(0.5),
                        direct.pct(0.99),
                        through.pct(0.5),
                        through.pct(0.99),
                        direct.rps,
                        through.rps,
                        (through.cpu_s or 0.0) / total * 1000,
                        direct.path_cpu_s / total * 1000,
                        through.path_cpu_s / total * 1000,
                    )
                )
            d50, d99, g50, g99, direct_rps, rps, cpu, direct_path, gateway_path = (
                statistics.median(column) for column in zip(*figures, strict=True)
            )
            what = "first token" if stream else "latency"
            rows.append(
                [
                    f"{workers}w {'stream' if stream else 'json'} {what}, {clients} client"
                    + ("s" if clients > 1 else ""),
                    f"{d50:.2f} / {d99:.2f}",
                    f"{g50:.2f} / {g99:.2f}",
                    f"+{g50 - d50:.2f} / +{g99 - d99:.2f}",
                    f"{g99 / d99:.1f}x",
                    f"{direct_rps:.0f}",
                    f"{rps:.0f}",
                    f"{rps / direct_rps:.2f}",
                    f"{cpu:.2f}",
                    f"{direct_path:.2f} / {gateway_path:.2f}",
                    f"{direct_path / gateway_path:.2f}",
                ]
            )
    return rows


def wait_idle(pid: int, workers: int, timeout: float = 300) -> None:
    """Wait until all `workers` worker processes exist and have gone quiet (their start-up — imports,
    building the application — is CPU-bound, so a quiet worker has started)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        processes = server_processes(pid)
        spawned = [p for p in processes[1:] if "multiprocessing.spawn" in " ".join(p.cmdline())]
        if workers == 1 or len(spawned) == workers:
            before = tree_cpu(processes)
            time.sleep(1.0)
            if tree_cpu(processes) - before < 0.05:
                return
        else:
            time.sleep(0.5)
    raise RuntimeError(f"{workers} workers did not start")


def serve_gateway(
    args: argparse.Namespace, folder: str, upstream_port: int, workers: int
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "DATABASE_", "BOOST_"))
    }
    environment.update(
        OPENAI_BASE_URL=f"http://127.0.0.1:{upstream_port}/v1",
        OPENAI_API_KEY="bench",
        CHAT_PROVIDER="offline",
        MCP_ENABLED="false",
        DOCS_AUTO_INDEX="false",
        EMBEDDINGS="none",
        LOG_LEVEL="WARNING",
        # One user sends every request: no per-user limits here (their cost is measured by
        # bench/limits_metrics_overhead.py).
        RATE_LIMIT_FREE_PER_MIN="0",
        RATE_LIMIT_PRO_PER_MIN="0",
        MAX_CONCURRENT_STREAMS="0",
    )
    if args.gateway_root:
        environment["PYTHONPATH"] = str(Path(args.gateway_root).resolve() / "backend")
    command = [sys.executable, "-m", "almanac.cli", "serve", "--port", str(port)]
    if workers > 1:
        command += ["--workers", str(workers)]
    server = subprocess.Popen(command, cwd=folder, env=environment)
    wait_for(f"http://127.0.0.1:{port}/ready", timeout=300)
    wait_idle(server.pid, workers)
    return server, port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="gateway worker counts to measure")
    parser.add_argument("--requests", type=int, default=3000, help="requests per run at 50 clients")
    parser.add_argument("--single", type=int, default=400, help="requests per run at 1 client")
    parser.add_argument("--chunks", type=int, default=8, help="text chunks in a streamed reply")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each configuration (figures are medians)")
    parser.add_argument("--gateway-root", default=None, help="serve the gateway from this checkout's backend/")
    args = parser.parse_args()
    upstream_port = free_port()
    rows: list[list[str]] = []
    upstream = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "bench" / "gateway_upstream.py"),
            "--port",
            str(upstream_port),
            "--chunks",
            str(args.chunks),
        ]
    )
    UPSTREAM.append(psutil.Process(upstream.pid))
    try:
        wait_for_port(upstream_port)
        for workers in args.workers:
            with tempfile.TemporaryDirectory() as folder:
                server, port = serve_gateway(args, folder, upstream_port, workers)
                try:
                    key = (Path(folder) / "data" / "local-api-key").read_text().strip()
                    rows += asyncio.run(
                        measure(
                            args,
                            f"http://127.0.0.1:{upstream_port}",
                            f"http://127.0.0.1:{port}",
                            key,
                            server.pid,
                            workers,
                        )
                    )
                finally:
                    server.terminate()
                    server.wait(60)
    finally:
        upstream.terminate()
        upstream.wait(30)
    header = [
        "",
        "direct p50/p99 ms",
        "gateway p50/p99 ms",
        "added p50/p99 ms",
        "p99 x",
        "direct req/s",
        "gateway req/s",
        "req/s ratio",
        "gateway CPU ms/req",
        "path CPU ms/req direct/gw",
        "CPU-bound ratio",
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print(f"{os.cpu_count()} cores shared by client, gateway and upstream; gateway from {args.gateway_root or ROOT}")
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    print(
        "Targets: added p50 < 1 ms and CPU < 1 ms/request at 1 client; at 50 clients req/s ratio >= 0.5 "
        "and gateway p99 <= 3x direct."
    )
    print(
        "Path CPU: client + upstream (direct) and client + gateway + upstream (through the gateway) per request. "
        "When every core is busy, req/s ratio <= CPU-bound ratio = direct path CPU / gateway path CPU."
    )


def wait_for_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"port {port} did not open")


if __name__ == "__main__":
    main()
