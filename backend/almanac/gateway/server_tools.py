"""Anthropic's server tools on upstreams that have none: the gateway runs web search itself.

Claude Code's WebSearch tool sends Anthropic's server tool `web_search_20250305` (forced with
`tool_choice`). The Anthropic API runs it; other upstreams cannot. Where the project's web search
provider is configured (WEB_SEARCH_API_KEY: `tools/builtin/web_search.py`), `WebSearchRun` plays
the Anthropic API's part: the upstream model gets a `web_search` function tool; each call it makes
is run by the gateway and answered with `server_tool_use` and `web_search_tool_result` blocks, as
Anthropic's API sends them (`usage.server_tool_use.web_search_requests` counted), and the model is
asked again with the results until it answers (at most `max_uses` searches; more get the
`max_uses_exceeded` error block). `allowed_domains` / `blocked_domains` filter the results;
`user_location` is not used. With gateway billing on, each search costs what the chat's
`web_search` tool costs, paid before it runs; one the balance cannot cover does not run (its
result is the `unavailable` error block).

Any other tool without an `input_schema` (other server tools, Anthropic-defined client tools such
as `bash_20250124`), and web search where no provider is configured, is refused with a 400 that
names it — never dropped in silence. An Anthropic upstream gets them all as sent.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

import orjson

from almanac.gateway.accumulate import accumulate
from almanac.gateway.errors import GatewayError
from almanac.gateway.llm_bridge import message_start, tool_use_events
from almanac.gateway.upstreams import Upstream
from almanac.gateway.wire import MessagesRequest
from almanac.tools.base import ToolError
from almanac.tools.builtin.web_search import SearchProvider, SearchResult, SearchUnavailable

Event = dict[str, Any]
MAX_ROUNDS = 10  # model calls in one request, whatever max_uses says
QUERY = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to search the web for."}},
    "required": ["query"],
}
Pay = Callable[[], Awaitable[bool]]  # pay for one search; False: the balance cannot cover it


def server_tools(request: MessagesRequest) -> list[tuple[int, dict[str, Any]]]:
    """(position, tool) of each tool that has no `input_schema` (server or Anthropic-defined tools)."""
    return [
        (n, tool)
        for n, tool in enumerate(request.tools)
        if isinstance(tool, dict) and "input_schema" not in tool and tool.get("type") not in (None, "custom")
    ]


def web_search_tool(request: MessagesRequest, *, available: bool) -> dict[str, Any] | None:
    """The request's web search server tool, if it has one; a 400 naming any tool the gateway
    cannot provide."""
    found = None
    for position, tool in server_tools(request):
        kind = str(tool.get("type"))
        if kind.startswith("web_search_") and available and found is None:
            found = tool
        elif kind.startswith("web_search_"):
            why = "another web_search is already given" if found else "no web search provider is configured"
            raise GatewayError(
                400, f"tools.{position}: {kind} is not available on this gateway ({why}: WEB_SEARCH_API_KEY)"
            )
        else:
            raise GatewayError(
                400,
                f"tools.{position}: {kind} is not available on this gateway's upstream (only web_search server tools "
                "are run by the gateway; give other tools an input_schema)",
            )
    return found


@dataclass(frozen=True)
class GatewaySearch:
    """The web search the gateway runs for server tools; `charge(user_id)` pays for one search
    (False: the balance cannot cover it), None when gateway billing is off."""

    provider: SearchProvider
    count: int = 5
    charge: Callable[[str], Awaitable[bool]] | None = None


@dataclass
class _Round:
    """One upstream call's share of the answer."""

    events: list[Event]  # as the upstream sent them (for the assistant message of the next call)
    calls: list[tuple[str, dict[str, Any]]]  # the web searches asked for: (upstream id, input)
    client_calls: bool = False
    stop_reason: str = "end_turn"


class WebSearchRun:
    """One request with a web search server tool on a non-Anthropic upstream."""

    def __init__(
        self,
        request: MessagesRequest,
        model: str,
        upstream: Upstream,
        provider: SearchProvider,
        tool: dict[str, Any],
        *,
        count: int = 5,
        pay: Pay | None = None,
    ) -> None:
        self.request, self.model, self.upstream, self.provider = request, model, upstream, provider
        self.name = str(tool.get("name") or "web_search")
        self.max_uses = int(tool.get("max_uses") or MAX_ROUNDS)
        self.allowed = [str(d).lower() for d in tool.get("allowed_domains") or ()]
        self.blocked = [str(d).lower() for d in tool.get("blocked_domains") or ()]
        self.count, self.pay = count, pay
        self.searches = 0
        self._position = 0
        self._started = False

    def _body(self, messages: list[dict[str, Any]], round_number: int) -> dict[str, Any]:
        tools = [
            {"name": self.name, "description": f"Search the web ({self.provider.name}).", "input_schema": QUERY}
            if isinstance(t, dict) and "input_schema" not in t
            else t
            for t in self.request.tools
        ]
        body = {**self.request.body, "messages": messages, "tools": tools}
        if self.searches >= self.max_uses:
            body["tool_choice"] = {"type": "none"}
        elif round_number > 0 and isinstance(body.get("tool_choice"), dict):
            body["tool_choice"] = {"type": "auto"}  # a forced search is forced once
        return body

    async def events(self) -> AsyncIterator[Event]:
        """The whole answer as one Anthropic event stream."""
        messages = list(self.request.body["messages"])
        usage = {"input_tokens": 0, "output_tokens": 0}
        stop_reason = "end_turn"
        for round_number in range(MAX_ROUNDS):
            asked = replace(self.request, body=self._body(messages, round_number))
            state = _Round([], [])
            async for event in self._round(asked, state, usage):
                yield event
            stop_reason = state.stop_reason
            if not state.calls:
                break
            results: list[dict[str, Any]] = []
            for call_id, arguments in state.calls:
                async for event in self._search(call_id, arguments, results):
                    yield event
            if state.client_calls:
                stop_reason = "tool_use"  # the caller runs its own tools; the searches are answered already
                break
            assistant = accumulate(state.events)["content"]
            messages += [{"role": "assistant", "content": assistant}, {"role": "user", "content": results}]
        else:
            stop_reason = "end_turn"
        usage["server_tool_use"] = {"web_search_requests": self.searches}  # type: ignore[assignment]
        yield {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": usage}
        yield {"type": "message_stop"}

    async def _round(self, asked: MessagesRequest, state: _Round, usage: dict[str, int]) -> AsyncIterator[Event]:
        indexes: dict[int, int] = {}
        captured: dict[int, tuple[str, list[str]]] = {}
        async for batch in self.upstream.stream(asked, self.model):
            for event in batch:
                state.events.append(event)
                kind = event["type"]
                if not self._started:
                    self._started = True
                    yield message_start(self.request.model)
                if kind == "message_start":
                    usage["input_tokens"] += int((event["message"].get("usage") or {}).get("input_tokens") or 0)
                elif kind == "message_delta":
                    usage["output_tokens"] += int((event.get("usage") or {}).get("output_tokens") or 0)
                    state.stop_reason = (event.get("delta") or {}).get("stop_reason") or state.stop_reason
                elif kind == "content_block_start":
                    block = event["content_block"]
                    if block.get("type") == "tool_use" and block.get("name") == self.name:
                        captured[event["index"]] = (str(block.get("id") or ""), [])
                        continue
                    state.client_calls |= block.get("type") == "tool_use"
                    indexes[event["index"]] = self._position
                    self._position += 1
                    yield {**event, "index": indexes[event["index"]]}
                elif kind in ("content_block_delta", "content_block_stop") and event["index"] in captured:
                    if kind == "content_block_delta" and event["delta"].get("type") == "input_json_delta":
                        captured[event["index"]][1].append(str(event["delta"]["partial_json"]))
                elif kind in ("content_block_delta", "content_block_stop"):
                    yield {**event, "index": indexes[event["index"]]}
        for call_id, parts in captured.values():
            arguments = orjson.loads("".join(parts) or "{}")
            state.calls.append((call_id, arguments if isinstance(arguments, dict) else {}))

    async def _search(
        self, call_id: str, arguments: dict[str, Any], results: list[dict[str, Any]]
    ) -> AsyncIterator[Event]:
        """Run one search: its two blocks for the caller, its tool result for the model."""
        query = str(arguments.get("query") or "").strip()
        server_id = f"srvtoolu_{uuid.uuid4().hex[:24]}"
        for event in tool_use_events(self._position, server_id, self.name, {"query": query}):
            if event["type"] == "content_block_start":
                event = {**event, "content_block": {**event["content_block"], "type": "server_tool_use"}}
            yield event
        self._position += 1
        found, error = await self._run(query)
        content: Any = (
            [_result_block(r) for r in found]
            if error is None
            else {
                "type": "web_search_tool_result_error",
                "error_code": error,
            }
        )
        block = {"type": "web_search_tool_result", "tool_use_id": server_id, "content": content}
        yield {"type": "content_block_start", "index": self._position, "content_block": block}
        yield {"type": "content_block_stop", "index": self._position}
        self._position += 1
        text = _as_text(query, found) if error is None else f"The web search failed: {error}."
        results.append({"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": error is not None})

    async def _run(self, query: str) -> tuple[list[SearchResult], str | None]:
        if self.searches >= self.max_uses:
            return [], "max_uses_exceeded"
        if not query:
            return [], "invalid_tool_input"
        if len(query) > 400:
            return [], "query_too_long"
        if self.pay is not None and not await self.pay():
            return [], "unavailable"  # the balance cannot cover it
        self.searches += 1
        try:
            found = await self.provider.search(query, count=self.count)
        except (SearchUnavailable, ToolError):
            return [], "unavailable"
        return [r for r in found if self._allowed(r.url)], None

    def _allowed(self, url: str) -> bool:
        host = (urlsplit(url).hostname or "").lower()
        matches = lambda domain: host == domain or host.endswith("." + domain)  # noqa: E731
        if self.allowed and not any(matches(d) for d in self.allowed):
            return False
        return not any(matches(d) for d in self.blocked)


def _result_block(result: SearchResult) -> dict[str, Any]:
    opaque = base64.urlsafe_b64encode(orjson.dumps({"snippet": result.snippet})).decode()
    return {
        "type": "web_search_result",
        "url": result.url,
        "title": result.title,
        "encrypted_content": opaque,
        "page_age": None,
    }


def _as_text(query: str, found: list[SearchResult]) -> str:
    if not found:
        return f"No web results for {query!r}."
    lines = [f"Web results for {query!r}:"]
    for number, result in enumerate(found, start=1):
        lines.append(f"{number}. {result.title} <{result.url}>" + (f"\n   {result.snippet}" if result.snippet else ""))
    return "\n".join(lines)
