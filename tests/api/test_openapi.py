"""The OpenAPI schema states what the API enforces: limits and patterns of every input, the key it
needs, and every status code each operation can answer (test_fuzz.py then holds the API to it)."""

from __future__ import annotations

from typing import Any

from tests.support import api_client, make_user

from almanac.api.schemas import ITEM_ID_PATTERN, NOT_BLANK_PATTERN, UUID_PATTERN


async def test_the_schema_states_every_limit_and_pattern(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url, max_message_chars=4_321)
    user = await make_user(services)
    async with api_client(services, settings, user.api_key) as http:
        schema = (await http.get("/openapi.json")).json()
    models, paths = schema["components"]["schemas"], schema["paths"]
    message = models["ChatCreate"]["properties"]["message"]
    assert (message["minLength"], message["maxLength"], message["pattern"]) == (1, 4_321, NOT_BLANK_PATTERN)
    conversation = models["ChatCreate"]["properties"]["conversation_id"]["anyOf"][0]
    assert conversation["pattern"] == UUID_PATTERN
    assert models["ConversationUpdate"]["properties"]["title"]["pattern"] == NOT_BLANK_PATTERN
    parameters = {
        (path, p["name"]): p["schema"]
        for path, ops in paths.items()
        for op in ops.values()
        for p in op.get("parameters", [])
    }
    offset = parameters[("/api/conversations", "offset")]
    assert (offset["minimum"], offset["maximum"]) == (0, 1_000_000_000)
    assert parameters[("/api/conversations", "limit")]["maximum"] == 200
    assert parameters[("/api/credits", "recent")]["maximum"] == 200
    assert parameters[("/api/conversations/{conversation_id}", "conversation_id")]["pattern"] == UUID_PATTERN
    item = parameters[("/api/conversations/{conversation_id}/items/{item_id}", "item_id")]
    assert item["pattern"] == ITEM_ID_PATTERN
    bearer = schema["components"]["securitySchemes"]["ApiKey"]
    assert (bearer["type"], bearer["scheme"]) == ("http", "bearer")
    assert paths["/api/me"]["get"]["security"] == [{"ApiKey": []}]


async def test_every_operation_declares_the_codes_it_can_answer(sqlite_url: str, build: Any) -> None:
    services, settings = build(sqlite_url)
    async with api_client(services, settings) as http:
        paths = (await http.get("/openapi.json")).json()["paths"]
    for path, operations in paths.items():
        if not path.startswith("/api/") and path not in ("/health", "/ready"):
            continue  # /v1/ answers in Anthropic's own error shape
        for method, operation in operations.items():
            codes = set(operation["responses"])
            label = f"{method.upper()} {path}"
            assert {"400", "413", "431", "500"} <= codes, label  # any request can get these
            if operation.get("security"):
                assert "401" in codes, label
            if method != "get":
                assert "403" in codes, label  # a cookie request from another site
            if operation.get("parameters") or operation.get("requestBody"):
                assert "422" in codes, label
                assert "HTTPValidationError" not in str(operation["responses"]["422"]), label  # not our shape
            if "{" in path:
                assert "404" in codes, label
