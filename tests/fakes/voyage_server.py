"""A local stand-in for Voyage AI's embeddings API: a real uvicorn server on 127.0.0.1 speaking the wire format.

POST /v1/embeddings takes ``{"input", "model", "input_type", "truncation", "output_dtype", "output_dimension",
"encoding_format"}`` with ``Authorization: Bearer <key>`` and answers ``{"object": "list", "data": [{"object":
"embedding", "embedding", "index"}], "model", "usage": {"total_tokens"}}``; embeddings are base64 float32
little-endian when ``encoding_format`` is "base64" (what the SDK asks for), lists of floats otherwise.

Like the real API it rejects a wrong key (401), more than 1,000 texts or more tokens per request than the
model allows (400). Tests can script failures (`fail_next`: 429 with Retry-After, 500, …, or a slow answer)
and read every request received (`requests`). Embeddings are deterministic: see `fake_embedding`.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import math
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

REQUEST_TOKEN_LIMITS = {"voyage-3-large": 120_000, "voyage-3.5": 320_000, "voyage-3.5-lite": 1_000_000}
MAX_TEXTS = 1_000
DEFAULT_DIMENSION = 1024


def fake_token_count(text: str) -> int:
    """The fake's own token count: one token per 4 UTF-8 bytes, like typical English text."""
    return math.ceil(len(text.encode("utf-8")) / 4) + 1


def fake_embedding(text: str, input_type: str | None, dimension: int = DEFAULT_DIMENSION) -> np.ndarray:
    """The unit float32 vector the fake returns for `text` (a function of text, input type and dimension)."""
    seed = hashlib.sha256(f"{input_type}\x00{text}".encode()).digest()
    vector = np.random.default_rng(int.from_bytes(seed[:8], "little")).standard_normal(dimension)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class ScriptedReply:
    status: int = 200
    detail: str = ""
    retry_after: str | None = None
    delay_s: float = 0.0


@dataclass
class _State:
    api_key: str
    requests: list[RecordedRequest] = field(default_factory=list)
    script: deque[ScriptedReply] = field(default_factory=deque)
    lock: threading.Lock = field(default_factory=threading.Lock)


class FakeVoyageServer:
    """Start with `with FakeVoyageServer() as server:`; point the SDK at `server.base_url`."""

    def __init__(self, *, api_key: str = "pa-test-key") -> None:
        self._state = _State(api_key=api_key)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        app = Starlette(routes=[Route("/v1/embeddings", self._embeddings, methods=["POST"])])
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._state.lock:
            return list(self._state.requests)

    def fail_next(self, *replies: ScriptedReply) -> None:
        """Answer the next requests with these replies, in order (status 200 with a delay = a slow success)."""
        with self._state.lock:
            self._state.script.extend(replies)

    def reset(self) -> None:
        with self._state.lock:
            self._state.requests.clear()
            self._state.script.clear()

    def start(self) -> FakeVoyageServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the fake Voyage server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._socket.close()

    def __enter__(self) -> FakeVoyageServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def _embeddings(self, request: Request) -> JSONResponse:
        body = await request.json()
        state = self._state
        with state.lock:
            state.requests.append(RecordedRequest(request.url.path, dict(request.headers), body))
            scripted = state.script.popleft() if state.script else None
        if scripted is not None:
            await asyncio.sleep(scripted.delay_s)
            if scripted.status != 200:
                headers = {"Retry-After": scripted.retry_after} if scripted.retry_after is not None else None
                return JSONResponse({"detail": scripted.detail}, status_code=scripted.status, headers=headers)
        if request.headers.get("authorization") != f"Bearer {state.api_key}":
            # Deliberately echoes what it was given, to prove callers never show vendor text verbatim.
            return JSONResponse({"detail": f"Provided API key is invalid: {request.headers.get('authorization')}"}, 401)
        return _embed(body)


def _embed(body: dict[str, Any]) -> JSONResponse:
    texts, model = body.get("input"), body.get("model")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or not texts:
        return JSONResponse({"detail": "input must be a non-empty list of strings"}, 400)
    if model not in REQUEST_TOKEN_LIMITS:
        return JSONResponse({"detail": f"Model {model} is not supported."}, 400)
    if len(texts) > MAX_TEXTS:
        return JSONResponse({"detail": f"The batch size limit is {MAX_TEXTS}. Your batch size is {len(texts)}."}, 400)
    tokens = sum(fake_token_count(t) for t in texts)
    if tokens > REQUEST_TOKEN_LIMITS[model]:
        return JSONResponse(
            {
                "detail": f"The max allowed tokens per submitted batch is {REQUEST_TOKEN_LIMITS[model]}. "
                f"Your batch has {tokens} tokens after truncation."
            },
            400,
        )
    dimension = body.get("output_dimension") or DEFAULT_DIMENSION
    data = []
    for index, text in enumerate(texts):
        vector = fake_embedding(text, body.get("input_type"), dimension)
        encoded: Any = (
            base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
            if body.get("encoding_format") == "base64"
            else vector.tolist()
        )
        data.append({"object": "embedding", "embedding": encoded, "index": index})
    return JSONResponse({"object": "list", "data": data, "model": model, "usage": {"total_tokens": tokens}})
