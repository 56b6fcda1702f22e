"""`Metrics`: the Prometheus instruments of one application, in a registry of its own.

What is counted (all per process; see README "Operations" for scraping several processes):

    almanac_http_requests_total{method, route, status}        route is the template (`/api/conversations/{id}`)
    almanac_http_request_duration_seconds{method, route}      to the end of the response (a stream's whole life)
    almanac_model_calls_total{source, provider, model, outcome}     source: chat | gateway; outcome: ok | error …
    almanac_model_tokens_total{source, provider, model, direction}  direction: input | output
    almanac_model_tokens_estimated_total{source, provider, model, direction}   the part of the above
                                                              that was estimated (the server reported no usage)
    almanac_tool_calls_total{tool, status}                    status as in `tool_result` events
    almanac_tool_errors_total{tool}
    almanac_credits_debited_total{source}, almanac_credits_refunded_total{source}   source: chat | gateway
    almanac_active_streams{kind}                              kind: chat | gateway (open in this process)
    almanac_rate_limited_total{limit}                         limit: requests | streams
    almanac_mcp_server_up{server}, almanac_mcp_server_tools{server}   read from the MCP client when scraped
    process_* and python_gc_*                                 the process's CPU, memory, file descriptors, GC

Label values a client can choose (a model name passed through to an upstream) are bounded: each is
cut to `MAX_LABEL_CHARS` with anything unprintable (NUL, control characters, lone surrogates)
replaced, and after `MAX_LABEL_VALUES` distinct values of a label, new ones are counted as `other`,
so no client can grow the scrape without limit or break its text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

MAX_LABEL_VALUES = 100
MAX_LABEL_CHARS = 100
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
McpStatus = tuple[str, str, int]  # server name, state ("ready", "restarting", "off", …), tools registered
CONTENT_TYPE = CONTENT_TYPE_LATEST


class BoundedLabel:
    """Keeps a label's distinct values under a bound: the first `limit` values pass, later new
    ones become `other`."""

    def __init__(self, limit: int = MAX_LABEL_VALUES) -> None:
        self.limit = limit
        self._seen: set[str] = set()

    def __call__(self, value: str) -> str:
        value = label_text(value)
        if value in self._seen:
            return value
        if len(self._seen) >= self.limit:
            return "other"
        self._seen.add(value)
        return value


def label_text(value: str) -> str:
    """A label value as exposed: at most MAX_LABEL_CHARS, printable (others become U+FFFD)."""
    value = value[:MAX_LABEL_CHARS]
    return value if value.isprintable() else "".join(ch if ch.isprintable() else "\ufffd" for ch in value)


class _McpCollector(Collector):
    def __init__(self, source: Callable[[], Iterable[McpStatus]]) -> None:
        self._source = source

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily("almanac_mcp_server_up", "1 when the MCP server is ready, else 0", labels=["server"])
        tools = GaugeMetricFamily("almanac_mcp_server_tools", "Tools the MCP server has registered", labels=["server"])
        for name, state, count in self._source():
            up.add_metric([name], 1.0 if state == "ready" else 0.0)
            tools.add_metric([name], float(count))
        yield up
        yield tools


class Metrics:
    """The application's instruments and the text exposition of them."""

    def __init__(self) -> None:
        registry = self.registry = CollectorRegistry()
        ProcessCollector(registry=registry)
        GCCollector(registry=registry)
        self.requests = Counter(
            "almanac_http_requests", "HTTP requests answered", ["method", "route", "status"], registry=registry
        )
        self.latency = Histogram(
            "almanac_http_request_duration_seconds",
            "Time from a request's arrival to the end of its response",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.model_calls = Counter(
            "almanac_model_calls", "Model calls", ["source", "provider", "model", "outcome"], registry=registry
        )
        self.model_tokens = Counter(
            "almanac_model_tokens", "Model tokens", ["source", "provider", "model", "direction"], registry=registry
        )
        self.model_tokens_estimated = Counter(
            "almanac_model_tokens_estimated",
            "Model tokens counted by Almanac because the server reported none (included in almanac_model_tokens)",
            ["source", "provider", "model", "direction"],
            registry=registry,
        )
        self.tool_calls = Counter("almanac_tool_calls", "Tool calls", ["tool", "status"], registry=registry)
        self.tool_errors = Counter("almanac_tool_errors", "Tool calls ending in an error", ["tool"], registry=registry)
        self.credits_debited = Counter("almanac_credits_debited", "Credits debited", ["source"], registry=registry)
        self.credits_refunded = Counter("almanac_credits_refunded", "Credits refunded", ["source"], registry=registry)
        self.active_streams = Gauge(
            "almanac_active_streams", "Streams open in this process", ["kind"], registry=registry
        )
        self.rate_limited = Counter(
            "almanac_rate_limited", "Requests refused with 429 by a limit", ["limit"], registry=registry
        )
        self._models = BoundedLabel()
        self._tools = BoundedLabel()
        self._routes = BoundedLabel(500)

    def watch_mcp(self, source: Callable[[], Iterable[McpStatus]]) -> None:
        """Report the MCP servers' status, read from `source` at every scrape."""
        self.registry.register(_McpCollector(source))

    def exposition(self) -> bytes:
        """Every metric in the Prometheus text format."""
        return generate_latest(self.registry)

    # --- what the application reports ---------------------------------------------------------

    def request(self, *, method: str, route: str, status: int, seconds: float) -> None:
        """One HTTP request answered (`route`: the route's template)."""
        route = self._routes(route)
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def model_call(
        self,
        *,
        source: str,
        provider: str,
        model: str,
        outcome: str,
        input_tokens: int,
        output_tokens: int,
        estimated: bool = False,
    ) -> None:
        """One model call and the tokens it used (`estimated`: counted here, the server reported none)."""
        model = self._models(model)
        self.model_calls.labels(source, provider, model, outcome).inc()
        for direction, count in (("input", input_tokens), ("output", output_tokens)):
            if count:
                self.model_tokens.labels(source, provider, model, direction).inc(count)
                if estimated:
                    self.model_tokens_estimated.labels(source, provider, model, direction).inc(count)

    def tool_call(self, *, tool: str, status: str, is_error: bool) -> None:
        """One tool call's end."""
        tool = self._tools(tool)
        self.tool_calls.labels(tool, status).inc()
        if is_error:
            self.tool_errors.labels(tool).inc()

    def credits(self, *, source: str, debited: int = 0, refunded: int = 0) -> None:
        """Credits taken from, or given back to, users' balances."""
        if debited:
            self.credits_debited.labels(source).inc(debited)
        if refunded:
            self.credits_refunded.labels(source).inc(refunded)

    def stream_opened(self, kind: str) -> None:
        self.active_streams.labels(kind).inc()

    def stream_closed(self, kind: str) -> None:
        self.active_streams.labels(kind).dec()

    def limited(self, limit: str) -> None:
        """A request refused by a limit (`requests` or `streams`)."""
        self.rate_limited.labels(limit).inc()
