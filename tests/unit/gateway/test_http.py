"""The gateway's shared upstream session: one session serves every caller, so nothing one caller's
upstream response leaves behind (a cookie) may ride along on another caller's request."""

from __future__ import annotations

from typing import Any

from tests.fakes.server import ServerThread

from almanac.gateway.http import HttpPool


class CookieSetter:
    """An upstream that sets a cookie on every answer and notes the cookies it is sent."""

    def __init__(self) -> None:
        self.cookies: list[str | None] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        while (await receive()).get("more_body"):
            pass
        headers = dict(scope["headers"])
        self.cookies.append(headers[b"cookie"].decode() if b"cookie" in headers else None)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"set-cookie", b"session=user-a; Path=/")],
            }
        )
        await send({"type": "http.response.body", "body": b"{}"})


async def test_a_cookie_set_for_one_request_is_never_sent_with_the_next() -> None:
    upstream = CookieSetter()
    pool = HttpPool()
    try:
        with ServerThread(upstream) as server:
            for _ in range(2):
                url = f"http://localhost:{server.port}/v1/chat/completions"  # a host name: an IP keeps no cookies
                async with pool.post(url, {"model": "m"}, {}) as response:
                    assert response.status == 200
                    await response.read()
    finally:
        await pool.close()
    assert upstream.cookies == [None, None]
