"""Usage views over HTTP: where a user's credits and tokens went, and the same service-wide for
administrators (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from tests.support import api_client, make_user

from almanac.auth.service import AccountService
from almanac.storage import gateway as gateway_store
from almanac.usage.recording import ModelUse, record_query_usage


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


async def test_a_users_usage_by_day_tool_model_and_query(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    asker = await make_user(services, "asker@example.com")
    other = await make_user(services, "other@example.com")
    boss = await AccountService(services.database).create_user(email="boss@example.com", role="admin")
    async with (
        api_client(services, settings, asker.api_key) as client,
        api_client(services, settings, other.api_key) as other_client,
        api_client(services, settings, boss.api_key) as admin,
    ):
        first = (await client.post("/api/chat", json={"message": "How do I cancel an asyncio task?"})).json()
        conversation = first["conversation_id"]
        second = (
            await client.post(
                "/api/chat", json={"message": "show me the full answer from earlier", "conversation_id": conversation}
            )
        ).json()
        assert second["tools_used"] == ["retrieve_full_context"] and second["credits_used"] == 7
        tour = {"message": "a detailed tour, please"}  # an answer the offline model gives (so it is charged)
        assert (await other_client.post("/api/chat", json=tour)).status_code == 200
        # Each chat query's finish step recorded its model's tokens once; a second record is refused.
        assert not await record_query_usage(
            services.database,
            user_id=asker.user.id,
            conversation_id=conversation,
            query_id="q2",
            uses=[ModelUse("offline", "almanac-offline", 120, 30)],
        )
        async with services.database.session() as session:
            await gateway_store.add_usage(
                session,
                rows=[
                    gateway_store.GatewayUsageRecord(
                        user_id=asker.user.id,
                        api_key_id=None,
                        model="claude-sonnet-4-6",
                        upstream="openai",
                        upstream_model="gpt-4o",
                        stream=False,
                        input_tokens=1000,
                        output_tokens=500,
                        latency_ms=10,
                        status=200,
                        created_at=datetime.now(UTC),
                    )
                ],
            )

        usage = (await client.get("/api/usage")).json()
        assert (
            usage["to"] == _today() and usage["from"] == (date.fromisoformat(_today()) - timedelta(days=29)).isoformat()
        )
        # The first question's lookup failed (no index here), so its answer carried nothing: free.
        assert len(usage["days"]) == 30 and usage["credits"] == 7
        assert usage["days"][-1] == {"day": _today(), "credits": 7, "daily": 7, "pack": 0}
        assert {(i["kind"], i["name"], i["calls"], i["credits"]) for i in usage["items"]} == {
            ("question", None, 2, 5),
            ("tool", "retrieve_full_context", 1, 2),
            ("tool", "retrieve_documentation", 1, 0),  # it found nothing: refunded, the call still shows
        }
        top = usage["top_queries"]
        assert [(q["query_id"], q["credits"]) for q in top] == [("q2", 7)]
        assert top[0]["question"] == "show me the full answer from earlier" and top[0]["title"]
        models = {(m["source"], m["model"]): m for m in usage["models"]}
        chat = models[("chat", "almanac-offline")]
        assert chat["calls"] == 4  # two model calls per question: the tool call, then the answer
        assert chat["input_tokens"] > 0 and chat["output_tokens"] > 0
        assert (models[("gateway", "gpt-4o")]["input_tokens"], models[("gateway", "gpt-4o")]["provider"]) == (
            1000,
            "openai",
        )
        assert usage["top_users"] == []

        theirs = (await other_client.get("/api/usage")).json()
        assert theirs["credits"] == 5
        assert [(m["model"], m["calls"]) for m in theirs["models"]] == [("almanac-offline", 1)]

        everyone = (await admin.get("/api/admin/usage")).json()
        assert everyone["credits"] == 12
        assert [(u["email"], u["credits"]) for u in everyone["top_users"]] == [
            ("asker@example.com", 7),
            ("other@example.com", 5),
        ]
        assert {q["email"] for q in everyone["top_queries"]} == {"asker@example.com", "other@example.com"}
        one = (await admin.get(f"/api/admin/users/{other.user.id}/usage")).json()
        assert one["credits"] == 5
        assert (await client.get("/api/admin/usage")).status_code == 404


async def test_refunds_net_out_and_deleted_conversations_still_count(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    asker = await make_user(services)
    async with api_client(services, settings, asker.api_key) as client:
        answer = (await client.post("/api/chat", json={"message": "How do I cancel an asyncio task?"})).json()
        followup = {"message": "show me the full context of q9-r", "conversation_id": answer["conversation_id"]}
        missed = (await client.post("/api/chat", json=followup)).json()
        spent = answer["credits_used"] + missed["credits_used"]
        assert (await client.delete(f"/api/conversations/{answer['conversation_id']}")).status_code == 204
        usage = (await client.get("/api/usage")).json()
        assert usage["credits"] == spent == (await client.get("/api/credits")).json()["used_this_month"]
        assert sum(item["credits"] for item in usage["items"]) == spent
        named = {(item["kind"], item["name"]) for item in usage["items"]}
        assert ("tool", "retrieve_full_context") in named and ("tool", None) not in named  # tools keep their names
        assert all(q["title"] is None and q["question"] is None for q in usage["top_queries"])
        assert {q["kind"] for q in usage["top_queries"]} == {"chat"}


async def test_discussion_turns_are_named_as_such_before_and_after_deletion(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    asker = await make_user(services)
    touring = [{"model": "offline", "role": "gives a detailed tour"}, {"model": "offline", "role": "a detailed tour"}]
    async with api_client(services, settings, asker.api_key) as client:
        held = (
            await client.post("/api/discussions", json={"goal": "Tour Almanac", "turns": 2, "participants": touring})
        ).json()
        assert held["credits_used"] == 10
        usage = (await client.get("/api/usage")).json()
        assert {(i["kind"], i["name"], i["calls"], i["credits"]) for i in usage["items"]} == {
            ("discussion", None, 2, 10)
        }
        top = usage["top_queries"]
        assert [(q["kind"], q["conversation_id"], q["query_id"]) for q in top] == [
            ("discussion", held["id"], "q2"),
            ("discussion", held["id"], "q1"),
        ]
        assert all(q["title"] == held["title"] for q in top)
        assert (await client.delete(f"/api/discussions/{held['id']}")).status_code == 204
        gone = (await client.get("/api/usage")).json()["top_queries"]
        assert [(q["kind"], q["title"]) for q in gone] == [("discussion", None)] * 2


async def test_ranges_are_forgiving_but_days_must_be_days(database_url: str, build: Any) -> None:
    services, settings = build(database_url)
    asker = await make_user(services)
    async with api_client(services, settings, asker.api_key) as client:

        async def covered(**params: str) -> tuple[str, str, int]:
            report = (await client.get("/api/usage", params=params)).json()
            return report["from"], report["to"], len(report["days"])

        assert await covered(**{"from": "2026-02-28", "to": "2026-03-01"}) == ("2026-02-28", "2026-03-01", 2)
        assert await covered(**{"from": "2026-05-02", "to": "2026-05-01"}) == ("2026-05-01", "2026-05-02", 2)
        assert await covered(**{"from": "2024-01-01", "to": "2026-01-01"}) == ("2025-01-01", "2026-01-01", 366)
        assert await covered(**{"from": "2020-01-01"}) == ("2020-01-01", "2020-01-30", 30)
        assert (await covered(to="9999-12-31"))[1] == "9999-12-30"
        assert (await covered(**{"from": "0001-01-01", "to": "0001-01-02"}))[2] == 2
        for value in ("yesterday", "2026-02-30", "0"):
            refused = await client.get("/api/usage", params={"from": value})
            assert refused.status_code == 422 and refused.json()["error"]["field"] == "from", value
