"""What the gateway adds: the same fake OpenAI-compatible upstream called directly and through
`almanac serve`'s /v1/messages, in one run.

Three processes share the machine: the fast fake upstream (`bench/gateway_upstream.py`, a bare ASGI
app), `almanac serve` (SQLite, usage recorded per request, LOG_LEVEL=WARNING so uvicorn writes no
access log), and this client (aiohttp, keep-alive). For non-streaming requests it reports p50/p99
latency, for streaming ones time to the first text token, at 1 and 50 concurrent clients; the
difference to the direct call is what the gateway adds. At 50 clients it also reports requests per
second and the gateway process's CPU time per request (user + system, from /proc).

    python bench/gateway_latency.py [--requests 3000] [--single 400] [--chunks 8] [--rounds 3]
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
    cpu_s: float | None = None

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

        process = psutil.Process(pid) if pid else None
        cpu_before = sum(process.cpu_times()[:2]) if process else 0.0
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - started
        cpu = (sum(process.cpu_times()[:2]) - cpu_before) if process else None
    return Run(latencies, wall, cpu)


def bodies(stream: bool) -> tuple[bytes, bytes]:
    anthropic = {"model": "claude-sonnet-4-6", "max_tokens": 256, "messages": [{"role": "user", "content": PROMPT}]}
    openai = {"model": "gpt-4o", "max_tokens": 256, "messages": [{"role": "user", "content": PROMPT}]}
    if stream:
        anthropic["stream"] = True
        openai.update(stream=True, stream_options={"include_usage": True})
    return json.dumps(anthropic).encode(), json.dumps(openai).encode()


async def measure(args: argparse.Namespace, upstream: str, gateway: str, key: str, pid: int) -> list[list[str]]:
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
                        through.rps,
                        direct.rps,
                        (through.cpu_s or 0.0) / total * 1000,
                    )
                )
            d50, d99, g50, g99, rps, direct_rps, cpu = (
                statistics.median(column) for column in zip(*figures, strict=True)
            )
            what = "time to first token" if stream else "latency"
            rows.append(
                [
                    f"{'streaming' if stream else 'non-streaming'} {what}, {clients} client"
                    + ("s" if clients > 1 else ""),
                    f"{d50:.2f} / {d99:.2f}",
                    f"{g50:.2f} / {g99:.2f}",
                    f"+{g50 - d50:.2f} / +{g99 - d99:.2f}",
                    f"{rps:.0f} (direct {direct_rps:.0f})",
                    f"{cpu:.2f} ms",
                ]
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=3000, help="requests per run at 50 clients")
    parser.add_argument("--single", type=int, default=400, help="requests per run at 1 client")
    parser.add_argument("--chunks", type=int, default=8, help="text chunks in a streamed reply")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each configuration (figures are medians)")
    args = parser.parse_args()
    upstream_port, gateway_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as folder:
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
        server = subprocess.Popen(
            [sys.executable, "-m", "almanac.cli", "serve", "--port", str(gateway_port)], cwd=folder, env=environment
        )
        try:
            wait_for(f"http://127.0.0.1:{gateway_port}/ready")
            key = (Path(folder) / "data" / "local-api-key").read_text().strip()
            rows = asyncio.run(
                measure(args, f"http://127.0.0.1:{upstream_port}", f"http://127.0.0.1:{gateway_port}", key, server.pid)
            )
        finally:
            server.terminate()
            upstream.terminate()
            server.wait(30)
            upstream.wait(30)
    header = [
        "",
        "direct p50 / p99 ms",
        "gateway p50 / p99 ms",
        "added p50 / p99 ms",
        "gateway req/s",
        "gateway CPU/req",
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print(f"{os.cpu_count()} cores shared by client, gateway and upstream")
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    print("Targets: < 2 ms added at p50, < 2 ms CPU per request, >= 300 requests/s at 50 clients.")


if __name__ == "__main__":
    main()
