"""Probes: /health answers while the process lives; /ready says 503, as JSON, when the database does
not answer (a load balancer then stops sending traffic)."""

from typing import Any

from tests.support import api_client


async def test_ready_is_503_with_a_json_body_when_the_database_is_down(build: Any) -> None:
    services, settings = build("postgresql+asyncpg://nobody@127.0.0.1:9/nowhere")  # nothing listens on port 9
    async with api_client(services, settings) as http:
        assert (await http.get("/health")).json() == {"status": "ok"}
        ready = await http.get("/ready")
    assert ready.status_code == 503
    assert ready.json() == {
        "status": "unavailable",
        "error": {
            "code": "database_unreachable",
            "message": "the database does not answer",
            "request_id": ready.headers["x-request-id"],
        },
    }


async def test_ready_is_200_when_the_database_answers(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url)
    async with api_client(services, settings) as http:
        assert (await http.get("/ready")).json() == {"status": "ready"}
