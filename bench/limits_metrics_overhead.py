"""What the rate limiter and the metrics cost per request: the same route served three ways, side by
side in one run.

    without      no limiter and no metrics (the app's operations removed; request IDs stay)
    in-process   limiter (requests per minute + stream slots, counted in the process) and metrics
    Redis        the same, counted in the Redis at REDIS_URL (default redis://127.0.0.1:6379/0)

The route is POST /v1/messages (the gateway's hot path, where overhead shows most) in front of the
fast fake OpenAI-compatible upstream of `bench/gateway_upstream.py`, JSON and streaming. Each
variant is its own `uvicorn` process (SQLite, usage recorded, no access log); the limit is set so
high that every request is checked and admitted. For each it reports p50/p99 latency at 1 client
(for streams: to the last byte, since a stream's slot is taken before the first and given back
after the last), requests per second at 50 clients and the server's CPU time per request. Figures
are medians over `--rounds` runs, the variants taking turns in each round.

    python bench/limits_metrics_overhead.py [--requests 3000] [--single 400] [--rounds 3]
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
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import psutil

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("without", "in-process", "Redis")
BODY = {"model": "claude-sonnet-4-6", "max_tokens": 256, "messages": [{"role": "user", "content": "Say hello."}]}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(url: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except Exception:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


def serve(variant: str, port: int) -> None:
    """Server mode: the app as configured by the environment, minus operations for `without`."""
    import uvicorn

    from almanac.config import load_settings
    from almanac.main import create_app
    from almanac.storage.migrate import upgrade

    settings = load_settings()
    upgrade(settings.resolved_database_url)
    if variant == "without":
        from almanac.main import build_services

        services = build_services(settings)
        assert services.gateway is not None
        services.gateway.limiter = None
        services.gateway.recorder.observers.clear()
        services.ops = None
        app = create_app(settings, services)
    else:
        app = create_app(settings)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, log_config=None)


@dataclass
class Run:
    latencies: list[float]
    wall_s: float
    cpu_s: float

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.wall_s


async def one(session: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str]) -> float:
    started = time.perf_counter()
    async with session.post(url, data=body, headers=headers) as response:
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {(await response.text())[:200]}")
        await response.read()
    return time.perf_counter() - started


async def run(url: str, body: bytes, headers: dict[str, str], *, clients: int, total: int, pid: int) -> Run:
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        for _ in range(min(50, total)):  # warm the pools
            await one(session, url, body, headers)
        latencies: list[float] = []
        queue = iter(range(total))

        async def worker() -> None:
            for _ in queue:
                latencies.append(await one(session, url, body, headers))

        process = psutil.Process(pid)
        cpu_before = sum(process.cpu_times()[:2])
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - started
        cpu = sum(process.cpu_times()[:2]) - cpu_before
    return Run(latencies, wall, cpu)


async def measure(args: argparse.Namespace, servers: dict[str, tuple[str, str, int]]) -> list[list[str]]:
    rows: list[list[str]] = []
    for stream in (False, True):
        body = json.dumps({**BODY, "stream": stream}).encode()
        single: dict[str, list[Run]] = {variant: [] for variant in VARIANTS}
        many: dict[str, list[Run]] = {variant: [] for variant in VARIANTS}
        for _ in range(args.rounds):
            for variant in VARIANTS:
                url, key, pid = servers[variant]
                headers = {"x-api-key": key, "content-type": "application/json"}
                single[variant].append(await run(url, body, headers, clients=1, total=args.single, pid=pid))
                many[variant].append(await run(url, body, headers, clients=50, total=args.requests, pid=pid))
        base_p50 = statistics.median(r.pct(0.5) for r in single["without"])
        base_p99 = statistics.median(r.pct(0.99) for r in single["without"])
        base_cpu = statistics.median(r.cpu_s / len(r.latencies) * 1000 for r in many["without"])
        for variant in VARIANTS:
            p50 = statistics.median(r.pct(0.5) for r in single[variant])
            p99 = statistics.median(r.pct(0.99) for r in single[variant])
            rps = statistics.median(r.rps for r in many[variant])
            cpu = statistics.median(r.cpu_s / len(r.latencies) * 1000 for r in many[variant])
            added = "" if variant == "without" else f"{p50 - base_p50:+.2f} / {p99 - base_p99:+.2f}"
            rows.append(
                [
                    "stream" if stream else "JSON",
                    variant,
                    f"{p50:.2f} / {p99:.2f}",
                    added,
                    f"{rps:,.0f}",
                    f"{cpu:.3f}" + ("" if variant == "without" else f" ({cpu - base_cpu:+.3f})"),
                ]
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, default=3000, help="requests per run at 50 clients")
    parser.add_argument("--single", type=int, default=400, help="requests per run at 1 client")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each variant (figures are medians)")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port)
        return
    upstream_port = free_port()
    processes: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as folder:
        processes.append(
            subprocess.Popen(
                [sys.executable, str(ROOT / "bench" / "gateway_upstream.py"), "--port", str(upstream_port)]
            )
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
            RATE_LIMIT_FREE_PER_MIN="1000000000",  # every request is checked, none refused
            MAX_CONCURRENT_STREAMS="1000",
        )
        servers: dict[str, tuple[str, str, int]] = {}
        try:
            for variant in VARIANTS:
                place = Path(folder) / variant.lower()
                place.mkdir()
                port = free_port()
                env = {**environment, "REDIS_URL": args.redis_url if variant == "Redis" else ""}
                server = subprocess.Popen(
                    [sys.executable, __file__, "--serve", variant, "--port", str(port)], cwd=place, env=env
                )
                processes.append(server)
                wait_for(f"http://127.0.0.1:{port}/ready")
                key = (place / "data" / "local-api-key").read_text().strip()
                servers[variant] = (f"http://127.0.0.1:{port}/v1/messages", key, server.pid)
            rows = asyncio.run(measure(args, servers))
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(30)
    header = ["route", "limiter + metrics", "p50 / p99 ms (1 client)", "added p50 / p99 ms", "req/s (50)", "CPU ms/req"]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print(f"POST /v1/messages, {os.cpu_count()} cores shared by client, server, upstream (and Redis)")
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
