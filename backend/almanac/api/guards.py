"""Request guards that run before any route: the `Host` a request names must be one this server
serves (DNS-rebinding defence), headers are bounded, and cookie-authenticated requests that change
state must come from this server's own pages (`Origin` check, the CSRF defence) — enforced here,
once, for every route there is or will be, not by each route remembering to ask.

A DNS-rebinding page reaches a loopback server under the attacker's hostname, so it names that
hostname in `Host`: refusing unknown hosts on every route closes that door whatever the route
does. Browsers send `Origin` on every cross-site request and on every non-GET request, so a
cookie-authenticated request that changes state is accepted only when its `Origin` is this
server's own — independent of how a FastAPI version parses bodies without a Content-Type. A
request counts as cookie-authenticated exactly when the API would authenticate it by its cookie:
it carries the session cookie and no (non-empty) `Authorization` header.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Receive, Scope, Send

SESSION_COOKIE = "almanac_session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
MAX_HEADER_BYTES = 8 * 1024  # one header line (name + value)
MAX_HEADERS_TOTAL = 32 * 1024


@dataclass(frozen=True)
class HostRules:
    """Which hostnames a request may name: exact names or addresses, `*.suffix` patterns, or `*`."""

    names: frozenset[str]
    suffixes: tuple[str, ...]
    any_host: bool

    @classmethod
    def parse(cls, patterns: Iterable[str]) -> HostRules:
        names: set[str] = set()
        suffixes: list[str] = []
        any_host = False
        for raw in patterns:
            pattern = raw.strip().lower()
            if not pattern:
                continue
            if pattern == "*":
                any_host = True
            elif pattern.startswith("*."):
                suffixes.append(pattern[1:])
            else:
                names.add(_normalise_host(pattern))
        return cls(frozenset(names), tuple(suffixes), any_host)

    def allows(self, host: str) -> bool:
        """Whether a hostname (no port) may be served."""
        host = _normalise_host(host)
        if not host:
            return False
        return self.any_host or host in self.names or any(host.endswith(suffix) for suffix in self.suffixes)


def split_host(value: str) -> tuple[str, str]:
    """`example.com:8000` → (`example.com`, `8000`); `[::1]:8000` → (`::1`, `8000`)."""
    value = value.strip()
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return "", ""
        port = value[end + 2 :] if value[end + 1 : end + 2] == ":" else ""
        return value[1:end], port
    if value.count(":") == 1:
        host, _, port = value.partition(":")
        return host, port
    return value, ""


def _normalise_host(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        return host


def same_origin(origin: str, host_header: str) -> bool:
    """Whether an `Origin` header names the host (and port) this request was sent to. Total: any
    text is an answer, never an exception (an unparseable origin or port is simply not ours)."""
    if not origin or origin == "null":
        return False
    try:
        parts = urlsplit(origin)
        origin_port_number = parts.port  # ValueError: out of range or not a number (`:99999…`, `:1.evil`)
        hostname = parts.hostname
    except ValueError:  # also an unbalanced `[` of an IPv6 literal
        return False
    if parts.scheme not in ("http", "https") or not hostname:
        return False
    host, port = split_host(host_header)
    default = "443" if parts.scheme == "https" else "80"
    origin_port = str(origin_port_number) if origin_port_number is not None else default
    port = port or default
    if not (port.isascii() and port.isdigit() and len(port) <= 5):
        return False
    return _normalise_host(hostname) == _normalise_host(host) and origin_port == str(int(port))


CROSS_ORIGIN_MESSAGE = (
    "this request changes state with a session cookie but does not come from this site's pages "
    "(missing or foreign Origin header); API clients should send 'Authorization: Bearer <API key>'"
)


def cookie_authenticated(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether the API would authenticate these headers by the session cookie (no Authorization)."""
    cookies = b"; ".join(value for name, value in headers if name == b"cookie")
    if not cookies or any(name == b"authorization" and value.strip() for name, value in headers):
        return False
    return bool(cookie_parser(cookies.decode("latin-1")).get(SESSION_COOKIE))


class RequestGuard:
    """ASGI middleware: refuse requests naming a host this server does not serve (400), oversized
    headers (431) and cookie-authenticated state changes from other sites' pages (403), with JSON
    bodies, before any route or other middleware runs."""

    def __init__(self, app: ASGIApp, *, hosts: HostRules) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope.get("headers") or []
        total = 0
        host = origin = ""
        for name, value in headers:
            size = len(name) + len(value)
            total += size
            if size > MAX_HEADER_BYTES or total > MAX_HEADERS_TOTAL:
                await _refuse(send, 431, "headers_too_large", "request headers are too large")
                return
            if name == b"host":
                host = value.decode("latin-1")
            elif name == b"origin":
                origin = value.decode("latin-1")
        hostname, _ = split_host(host)
        if not self.hosts.allows(hostname):
            await _refuse(
                send,
                400,
                "host_not_allowed",
                "this server does not serve the host named in the request (see ALLOWED_HOSTS)",
            )
            return
        if scope["method"] not in SAFE_METHODS and cookie_authenticated(headers) and not same_origin(origin, host):
            await _refuse(send, 403, "cross_origin_request", CROSS_ORIGIN_MESSAGE)
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
