"""A fast fake OpenAI-compatible upstream for the gateway benchmark: a bare ASGI app on uvicorn
(uvloop, httptools, no access log) answering POST /v1/chat/completions with a canned reply — JSON,
or SSE chunks sent one by one — so the upstream is never the bottleneck being measured.

    python bench/gateway_upstream.py --port P [--chunks 8]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

TEXT = "The quick brown fox jumps over the lazy dog again and again. "


def completion() -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": "bench",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
        }
    ).encode()


def chunks(count: int) -> list[bytes]:
    def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> bytes:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench"}
        return b"data: " + json.dumps({**body, "choices": choices, **extra}).encode() + b"\n\n"

    words = TEXT.split(" ")
    per = max(1, len(words) // count)
    pieces = [" ".join(words[i : i + per]) + " " for i in range(0, len(words), per)]
    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": piece}) for piece in pieces]
    out.append(chunk({}, "stop"))
    out.append(chunk(None, usage={"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}))
    out.append(b"data: [DONE]\n\n")
    return out


def build_app(count: int) -> Any:
    json_body = completion()
    stream_chunks = chunks(count)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if b'"stream":true' in body or b'"stream": true' in body:
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
            )
            for piece in stream_chunks:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(json_body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": json_body})

    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=8)
    args = parser.parse_args()
    uvicorn.run(
        build_app(args.chunks),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
        loop="uvloop",
        http="httptools",
        lifespan="off",
    )


if __name__ == "__main__":
    main()
