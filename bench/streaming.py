"""200 concurrent streaming chats against a fake model that streams 50 tokens, 20 ms apart.

Three processes: the fake OpenAI-compatible model, `almanac serve` (the OpenAI-compatible
provider pointed at the fake), and this client. Each token's text is the fake's clock when it sent
it, so the client measures, per token, how long it took to arrive: once straight from the fake
(baseline: network and client costs) and once through Almanac, in the same run. The difference is
the delay the service adds. The server's resident memory is sampled while the chats stream.

    python bench/streaming.py [--chats 200] [--tokens 50] [--delay 0.02] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


def stamps(text: str) -> list[float]:
    return [float(part) for part in text.split() if part.replace(".", "", 1).isdigit()]


@dataclass
class Measured:
    """Per-token delays (arrival minus the fake's send time), per-chat first-token and total times."""

    delays: list[float] = field(default_factory=list)
    first: list[float] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    elapsed: float = 0.0


async def measure_streams(http: httpx.AsyncClient, chats: int, request: Any, texts: Any) -> Measured:
    """Run `chats` streams at once; `request(n)` gives (method, path, body); `texts(line)` the token
    texts a line of the stream carries."""
    measured = Measured()
    started = time.monotonic()

    async def one(n: int) -> None:
        began = time.monotonic()
        first = None
        method, path, body = request(n)
        async with http.stream(method, path, json=body) as response:
            async for line in response.aiter_lines():
                now = time.time()
                arrived = stamps(" ".join(texts(line)))
                if arrived and first is None:
                    first = time.monotonic() - began
                measured.delays.extend(now - sent for sent in arrived)
        measured.first.append(first if first is not None else float("nan"))
        measured.durations.append(time.monotonic() - began)

    await asyncio.gather(*(one(n) for n in range(chats)))
    measured.elapsed = time.monotonic() - started
    return measured


def client(base: str, chats: int, **kwargs: Any) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=chats + 10, max_keepalive_connections=chats + 10)
    return httpx.AsyncClient(base_url=base, timeout=300, limits=limits, **kwargs)


async def through_almanac(base: str, key: str, chats: int) -> Measured:
    event = {"name": ""}

    def texts(line: str) -> list[str]:
        if line.startswith("event: "):
            event["name"] = line[7:]
        elif line.startswith("data: ") and event["name"] == "text_delta":
            return [json.loads(line[6:])["text"]]
        return []

    async with client(base, chats, headers={"Authorization": f"Bearer {key}"}) as http:
        return await measure_streams(
            http, chats, lambda n: ("POST", "/api/chat/stream", {"message": f"chat {n}"}), texts
        )


async def straight_from_model(base: str, chats: int) -> Measured:
    def texts(line: str) -> list[str]:
        if not line.startswith("data: {"):
            return []
        return [choice["delta"].get("content") or "" for choice in json.loads(line[6:])["choices"]]

    def request(n: int) -> tuple[str, str, dict[str, Any]]:
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": f"chat {n}"}]}
        return "POST", "/v1/chat/completions", body

    async with client(base, chats) as http:
        return await measure_streams(http, chats, request, texts)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def sample_rss(process: psutil.Process, stop: asyncio.Event, peak: list[int]) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], process.memory_info().rss)
        await asyncio.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--delay", type=float, default=0.02)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    # Only the chat path is measured: no background doc indexing, no MCP servers.
    env.update(
        PYTHONPATH=str(ROOT),
        DATA_DIR=str(folder / "data"),
        LOCAL_USER="false",
        LOG_LEVEL="WARNING",
        SUMMARY_WAIT_S="0",
        DOCS_AUTO_INDEX="false",
        MCP_ENABLED="false",
        # One user sends every request: no per-user limits here (their cost is measured by
        # bench/limits_metrics_overhead.py).
        RATE_LIMIT_FREE_PER_MIN="0",
        RATE_LIMIT_PRO_PER_MIN="0",
        MAX_CONCURRENT_STREAMS="0",
    )
    if args.database_url:
        env["DATABASE_URL"] = args.database_url
    model_port, app_port = free_port(), free_port()
    fake = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fakes.openai_server",
            "--port",
            str(model_port),
            "--tokens",
            str(args.tokens),
            "--delay",
            str(args.delay),
        ],
        cwd=ROOT,
        env=env,
    )
    almanac = [sys.executable, "-m", "almanac.cli"]
    created = subprocess.run(
        [*almanac, "users", "create", "--email", "bench@example.com", "--plan", "pro"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    key = created.stdout.strip().splitlines()[-1]
    subprocess.run(
        [*almanac, "credits", "grant", "--email", "bench@example.com", "--amount", "100000", "--reason", "bench"],
        env=env,
        capture_output=True,
        check=True,
    )
    env.update(CHAT_PROVIDER="openai", OPENAI_BASE_URL=f"http://127.0.0.1:{model_port}/v1", OPENAI_MODEL="fake")
    server = subprocess.Popen([*almanac, "serve", "--port", str(app_port)], env=env)
    try:
        wait_for(f"http://127.0.0.1:{model_port}/v1/chat/completions")
        wait_for(f"http://127.0.0.1:{app_port}/health")
        process = psutil.Process(server.pid)
        idle_rss = process.memory_info().rss

        async def measure() -> tuple[Measured, Measured, int]:
            baseline = await straight_from_model(f"http://127.0.0.1:{model_port}", args.chats)
            stop, peak = asyncio.Event(), [idle_rss]
            sampler = asyncio.create_task(sample_rss(process, stop, peak))
            served = await through_almanac(f"http://127.0.0.1:{app_port}", key, args.chats)
            stop.set()
            await sampler
            return baseline, served, peak[0]

        baseline, served, peak_rss = asyncio.run(measure())
    finally:
        server.terminate()
        fake.terminate()
        server.wait(30)
        fake.wait(30)
    report(args, baseline, served, idle_rss, peak_rss)


def report(args: argparse.Namespace, baseline: Measured, served: Measured, idle_rss: int, peak_rss: int) -> None:
    expected = args.chats * args.tokens
    ideal = (args.tokens - 1) * args.delay
    print(
        f"{args.chats} concurrent streaming chats; the fake model streams {args.tokens} tokens {args.delay * 1000:g} "
        f"ms apart (a stream lasts {ideal:.2f} s unhindered); database: {args.database_url or 'SQLite file'}; "
        f"client, fake model and server share this machine's {os.cpu_count()} cores\n"
    )
    print("| path | tokens | token delay p50 / p99 ms | first token p50 / p99 s | chat p50 / p99 s | all done s |")
    print("|---|---|---|---|---|---|")
    for name, m in (("straight from the fake model", baseline), ("through Almanac", served)):
        print(
            f"| {name} | {len(m.delays):,}/{expected:,} | {percentile(m.delays, 0.5) * 1000:.1f} / "
            f"{percentile(m.delays, 0.99) * 1000:.1f} | {percentile(m.first, 0.5):.2f} / "
            f"{percentile(m.first, 0.99):.2f} | {percentile(m.durations, 0.5):.2f} / "
            f"{percentile(m.durations, 0.99):.2f} | {m.elapsed:.1f} |"
        )
    added_p50 = (percentile(served.delays, 0.5) - percentile(baseline.delays, 0.5)) * 1000
    added_p99 = (percentile(served.delays, 0.99) - percentile(baseline.delays, 0.99)) * 1000
    print(
        f"\nper token, the service adds p50 {added_p50:+.1f} ms and p99 {added_p99:+.1f} ms "
        "(token delay through Almanac minus straight from the model)"
    )
    print(
        f"throughput through Almanac: {len(served.delays) / served.elapsed:,.0f} tokens/s "
        f"(plus one summary stream per chat, written by the same fake model)"
    )
    print(
        f"server resident memory: {idle_rss / 2**20:.0f} MiB idle, {peak_rss / 2**20:.0f} MiB peak "
        f"(+{(peak_rss - idle_rss) / 2**20 / args.chats * 1024:.0f} KiB per concurrent chat)"
    )


if __name__ == "__main__":
    main()
