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
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


async def through_almanac(base: str, key: str, chats: int) -> list[float]:
    delays: list[float] = []
    limits = httpx.Limits(max_connections=chats + 10, max_keepalive_connections=chats + 10)
    async with httpx.AsyncClient(
        base_url=base, timeout=120, limits=limits, headers={"Authorization": f"Bearer {key}"}
    ) as http:

        async def one(n: int) -> None:
            async with http.stream("POST", "/api/chat/stream", json={"message": f"chat {n}"}) as response:
                event = ""
                async for line in response.aiter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: ") and event == "text_delta":
                        now = time.time()
                        delays.extend(now - sent for sent in stamps(json.loads(line[6:])["text"]))

        await asyncio.gather(*(one(n) for n in range(chats)))
    return delays


async def straight_from_model(base: str, chats: int) -> list[float]:
    delays: list[float] = []
    limits = httpx.Limits(max_connections=chats + 10, max_keepalive_connections=chats + 10)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as http:

        async def one(n: int) -> None:
            body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": f"chat {n}"}]}
            async with http.stream("POST", "/v1/chat/completions", json=body) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: {"):
                        now = time.time()
                        for choice in json.loads(line[6:])["choices"]:
                            delays.extend(now - sent for sent in stamps(choice["delta"].get("content") or ""))

        await asyncio.gather(*(one(n) for n in range(chats)))
    return delays


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
    env.update(
        PYTHONPATH=str(ROOT), DATA_DIR=str(folder / "data"), LOCAL_USER="false", LOG_LEVEL="WARNING", SUMMARY_WAIT_S="0"
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

        async def measure() -> tuple[list[float], list[float], int, float]:
            baseline = await straight_from_model(f"http://127.0.0.1:{model_port}", args.chats)
            stop, peak = asyncio.Event(), [idle_rss]
            sampler = asyncio.create_task(sample_rss(process, stop, peak))
            started = time.monotonic()
            served = await through_almanac(f"http://127.0.0.1:{app_port}", key, args.chats)
            elapsed = time.monotonic() - started
            stop.set()
            await sampler
            return baseline, served, peak[0], elapsed

        baseline, served, peak_rss, elapsed = asyncio.run(measure())
    finally:
        server.terminate()
        fake.terminate()
        server.wait(30)
        fake.wait(30)
    expected = args.chats * args.tokens
    print(
        f"{args.chats} concurrent streaming chats, fake model streaming {args.tokens} tokens {args.delay * 1000:g} ms "
        f"apart; database: {args.database_url or 'SQLite file'}\n"
    )
    print("| path | tokens received | p50 ms | p99 ms |\n|---|---|---|---|")
    print(
        f"| straight from the fake model (baseline) | {len(baseline):,}/{expected:,} | "
        f"{percentile(baseline, 0.5) * 1000:.1f} | {percentile(baseline, 0.99) * 1000:.1f} |"
    )
    print(
        f"| through Almanac | {len(served):,}/{expected:,} | {percentile(served, 0.5) * 1000:.1f} | "
        f"{percentile(served, 0.99) * 1000:.1f} |"
    )
    added_p50 = (percentile(served, 0.5) - percentile(baseline, 0.5)) * 1000
    added_p99 = (percentile(served, 0.99) - percentile(baseline, 0.99)) * 1000
    print(f"\ndelay the service adds per token: p50 {added_p50:.1f} ms, p99 {added_p99:.1f} ms")
    print(
        f"mean per-token delay through Almanac: {statistics.mean(served) * 1000:.1f} ms; "
        f"all {args.chats} chats done in {elapsed:.1f} s"
    )
    print(
        f"server resident memory: {idle_rss / 2**20:.0f} MiB idle, {peak_rss / 2**20:.0f} MiB peak "
        f"(+{(peak_rss - idle_rss) / 2**20 / args.chats * 1024:.0f} KiB per concurrent chat)"
    )


if __name__ == "__main__":
    main()
