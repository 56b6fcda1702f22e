"""`HttpMetrics`: counts every HTTP request and its duration by method, route template and status.

The route is the template the router matched (`/api/conversations/{conversation_id}`), never the
raw path, so conversation IDs do not become label values. `POST /v1/messages` is served on bare
ASGI without the router (the gateway's hot path) and is named here; a request no route matched
(404s, refusals before routing) is counted as `unmatched`.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from almanac.ops.metrics import Metrics

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_BARE_ROUTES = frozenset({"/v1/messages"})  # served without the router


def route_of(scope: Scope) -> str:
    """The template of the route that served `scope`, or `unmatched`."""
    route = getattr(scope.get("route"), "path", None)
    if isinstance(route, str) and route:
        return route
    path = scope.get("path", "")
    return path if path in _BARE_ROUTES else "unmatched"


class HttpMetrics:
    """ASGI middleware: one observation per HTTP request, when its response has ended."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers if the application ends without a response

        async def observed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        finally:
            method = scope.get("method", "GET")
            self.metrics.request(
                method=method if method in _METHODS else "OTHER",
                route=route_of(scope),
                status=status,
                seconds=time.perf_counter() - started,
            )
