"""A fake OpenAI-compatible Chat Completions server speaking the real wire format (SSE chunks,
tool-call fragments by index, a usage chunk, `data: [DONE]`).

Script it with `FakeOpenAI.enqueue(...)` (`Reply` or `Failure`); requests are recorded. A reply may
carry reasoning (`reasoning_content`, as DeepSeek and vLLM send it) and its own finish reason. Like
real servers it can refuse: system messages after the first (`system_first_only`, in a chat
template's words), parameters a model does not take (`unsupported`, in OpenAI's words), a
`max_tokens` above the model's output limit (`max_output`, in OpenAI's words). With
`context_window` set, it counts each request's prompt with a real tokenizer and refuses one whose
prompt plus `max_tokens` exceeds the window, as OpenAI does (400, `context_length_exceeded`); the
usage it reports is then the real count. With
`Reply(stamp_tokens=n)` the server streams n tokens whose text is the server's clock at emission
(`time.time()`), which the streaming benchmark uses to measure the delay the service adds.

`usage` says how the server reports token usage: "openai" (a usage chunk when
`stream_options.include_usage` asks for one, `usage` in every complete response), "llama.cpp"
(as llama-cpp-python's server does: it ignores `stream_options`, so a stream never carries usage;
its first chunk's delta is only the role, every choice has `logprobs: null`, the last chunk has an
empty delta and the finish reason; complete responses do report usage) or "none" (neither a stream
nor a complete response reports any).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.tokens import count_openai_prompt
from tests.fakes.validation import openai_problem


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (id, name, input)
    raw_arguments: str | None = None  # sent instead of the first call's JSON arguments
    prompt_tokens: int = 30
    completion_tokens: int = 9
    chunk_delay_s: float = 0.0
    stamp_tokens: int = 0
    delay_s: float = 0.0  # wait this long before answering at all (for timeouts)
    reasoning: str = ""  # sent as `reasoning_content` before the answer
    # After `hold_after` words of text, wait (up to 10 s) until the test sets `hold`; whether it was set in
    # time is appended to `released` (proves a client saw the first words before the reply was complete).
    hold: threading.Event | None = None
    hold_after: int = 1
    released: list[bool] = field(default_factory=list)
    finish_reason: str | None = "auto"  # "auto": tool_calls or stop; None: no finish reason at all


@dataclass
class Failure:
    status: int = 500
    message: str = "server error"
    headers: dict[str, str] = field(default_factory=dict)


class FakeOpenAI:
    def __init__(self, *, default: Reply | None = None) -> None:
        self.steps: deque[Reply | Failure] = deque()
        self.requests: list[dict[str, Any]] = []
        # Answers chosen by looking at the request; consulted before the queue (None: use the queue).
        self.route: Callable[[dict[str, Any]], Reply | None] = lambda body: None
        self.default = default or Reply(text="ok")
        self.context_window: int | None = None
        self.validate = True  # refuse what the real API refuses (tests/fakes/validation.py)
        self.invalid: list[str] = []  # why each refused request was refused
        self.prompt_tokens: list[int] = []  # counted per request when `context_window` is set
        self.refused_too_long = 0
        self.system_first_only = False  # refuse system messages after the first message (chat templates)
        self.unsupported: set[str] = set()  # parameters refused as unsupported (e.g. reasoning_effort)
        self.max_output: int | None = None  # refuse a larger max_tokens, as OpenAI does
        self.refusals: list[str] = []  # what was refused, in order
        self.usage: Literal["openai", "llama.cpp", "none"] = "openai"
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._completions, methods=["POST"])])

    def enqueue(self, *steps: Reply | Failure) -> None:
        self.steps.extend(steps)

    async def _completions(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append({"headers": dict(request.headers), "body": body, "at": time.monotonic()})
        problem = openai_problem(body) if self.validate else None
        if problem is not None:
            self.invalid.append(problem)
            error = {"message": problem, "type": "invalid_request_error", "param": None, "code": None}
            return JSONResponse({"error": error}, status_code=400)
        refusal = self._quirk_refusal(body)
        if refusal is not None:
            self.refusals.append(refusal)
            error = {"message": refusal, "type": "invalid_request_error", "param": None, "code": None}
            return JSONResponse({"error": error}, status_code=400)
        if self.context_window is not None:
            prompt = count_openai_prompt(body)
            self.prompt_tokens.append(prompt)
            wanted = prompt + int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
            if wanted > self.context_window:
                self.refused_too_long += 1
                message = (
                    f"This model's maximum context length is {self.context_window} tokens. However, you "
                    f"requested {wanted} tokens ({prompt} in the messages, {wanted - prompt} in the completion). "
                    "Please reduce the length of the messages or completion."
                )
                error = {"message": message, "type": "invalid_request_error", "param": "messages"}
                return JSONResponse({"error": {**error, "code": "context_length_exceeded"}}, status_code=400)
        routed = self.route(body)
        step = routed if routed is not None else (self.steps.popleft() if self.steps else self.default)
        if isinstance(step, Reply) and step.delay_s:
            await asyncio.sleep(step.delay_s)
        if isinstance(step, Failure):
            return JSONResponse(
                {"error": {"message": step.message, "type": "server_error", "code": None}},
                status_code=step.status,
                headers=step.headers,
            )
        if self.context_window is not None:
            step = replace(step, prompt_tokens=self.prompt_tokens[-1])
        if not body.get("stream"):
            completion = _completion(step, body.get("model", "m"))
            if self.usage == "none":
                del completion["usage"]
            return JSONResponse(completion)
        usage = self.usage == "openai" and bool((body.get("stream_options") or {}).get("include_usage"))
        if self.usage != "openai":
            return StreamingResponse(_llama_cpp_chunks(step, body.get("model", "m")), media_type="text/event-stream")
        return StreamingResponse(_chunks(step, body.get("model", "m"), usage), media_type="text/event-stream")

    def _quirk_refusal(self, body: dict[str, Any]) -> str | None:
        roles = [m.get("role") for m in body.get("messages") or []]
        if self.system_first_only and "system" in roles[1:]:
            return "System message must be at the beginning."  # Qwen's chat template, through vLLM
        for name in sorted(self.unsupported):
            if name in body:
                return f"Unsupported parameter: '{name}' is not supported with this model."
        wanted = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
        if self.max_output is not None and wanted > self.max_output:
            return (
                f"max_tokens is too large: {wanted}. This model supports at most {self.max_output} completion tokens, "
                f"whereas you provided {wanted}."
            )
        return None


def _finish(reply: Reply) -> str | None:
    if reply.finish_reason != "auto":
        return reply.finish_reason
    return "tool_calls" if reply.tool_calls else "stop"


def _tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, n, a in reply.tool_calls
    ]


def _completion(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = _tool_calls(reply)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


def _chunk(model: str, delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> bytes:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    payload = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        **extra,
    }
    return f"data: {json.dumps(payload)}\n\n".encode()


async def _chunks(reply: Reply, model: str, usage: bool) -> AsyncIterator[bytes]:
    yield _chunk(model, {"role": "assistant", "content": ""})
    for word in reply.reasoning.split(" ") if reply.reasoning else ():
        yield _chunk(model, {"reasoning_content": f"{word} "})
    pieces = [f"{w} " for w in reply.text.split(" ")] if reply.text else []
    for index in range(reply.stamp_tokens):
        if index:
            await asyncio.sleep(reply.chunk_delay_s)
        yield _chunk(model, {"content": f"{time.time():.6f} "})
    for number, piece in enumerate(pieces):
        if reply.hold is not None and number == reply.hold_after:
            reply.released.append(await asyncio.to_thread(reply.hold.wait, 10))
        yield _chunk(model, {"content": piece})
        if reply.chunk_delay_s:
            await asyncio.sleep(reply.chunk_delay_s)
    for position, (call_id, name, arguments) in enumerate(reply.tool_calls):
        raw = reply.raw_arguments if (position == 0 and reply.raw_arguments is not None) else json.dumps(arguments)
        yield _chunk(
            model,
            {
                "tool_calls": [
                    {"index": position, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
                ]
            },
        )
        half = max(1, len(raw) // 2)
        for start in range(0, len(raw), half):
            piece = raw[start : start + half]
            yield _chunk(model, {"tool_calls": [{"index": position, "function": {"arguments": piece}}]})
    yield _chunk(model, {}, _finish(reply))
    if usage:
        yield _chunk(
            model,
            None,
            usage={
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        )
    yield b"data: [DONE]\n\n"


def _llama_cpp_chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {
        "id": "chatcmpl-llama",
        "model": model,
        "created": int(time.time()),
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return f"data: {json.dumps(payload)}\n\n".encode()


async def _llama_cpp_chunks(reply: Reply, model: str) -> AsyncIterator[bytes]:
    """A stream as llama-cpp-python's server sends it: no usage anywhere (see the module docstring)."""
    yield _llama_cpp_chunk(model, {"role": "assistant"})
    for piece in [f"{w} " for w in reply.text.split(" ")] if reply.text else []:
        yield _llama_cpp_chunk(model, {"content": piece})
        if reply.chunk_delay_s:
            await asyncio.sleep(reply.chunk_delay_s)
    for position, (call_id, name, arguments) in enumerate(reply.tool_calls):
        function = {"name": name, "arguments": json.dumps(arguments)}
        yield _llama_cpp_chunk(
            model, {"tool_calls": [{"index": position, "id": call_id, "type": "function", "function": function}]}
        )
    yield _llama_cpp_chunk(model, {}, "tool_calls" if reply.tool_calls else "stop")
    yield b"data: [DONE]\n\n"


def main() -> None:
    """Serve a fake that streams `--tokens` time-stamped tokens, `--delay` seconds apart (benchmarks)."""
    import argparse

    import uvicorn

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--delay", type=float, default=0.02)
    args = parser.parse_args()
    fake = FakeOpenAI(default=Reply(stamp_tokens=args.tokens, chunk_delay_s=args.delay))
    uvicorn.run(fake.app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
