"""The table logged at startup: what runs, on what, and which features are off and why."""

from __future__ import annotations

from almanac.config import Settings
from almanac.services import Services


def rows(settings: Settings, services: Services) -> list[tuple[str, str]]:
    """(component, what is in use) pairs."""
    model = services.model
    off: list[str] = []
    if settings.anthropic_api_key is None:
        off.append("Anthropic models (ANTHROPIC_API_KEY not set)")
    if not (settings.openai_base_url or settings.openai_api_key):
        off.append("OpenAI-compatible models (OPENAI_BASE_URL / OPENAI_API_KEY not set)")
    if not settings.local_user:
        off.append("local user (LOCAL_USER=false)")
    if settings.resolved_doc_source != "context7":
        off.append("Context7 (CONTEXT7_API_KEY not set; DOC_SOURCE=context7 uses it without a key)")
    if settings.voyage_api_key is None:
        off.append("Voyage embeddings and reranking (VOYAGE_API_KEY not set)")
    doc_source, embeddings = services.documentation.describe()
    if services.mcp is not None:
        off += [f"MCP server {s.name} ({s.detail})" for s in services.mcp.statuses() if s.state == "off"]
    return [
        ("database", services.database.display_url),
        ("chat model", f"{model.provider} / {model.name}"),
        ("summariser", services.summariser.name),
        ("doc source", doc_source),
        ("embeddings", embeddings),
        ("MCP servers", services.mcp.summary() if services.mcp is not None else "none"),
        ("tools", ", ".join(services.registry.names) or "none"),
        ("web UI", str(services.web_ui) if services.web_ui else "not built (run `make serve` with Node.js and npm)"),
        (
            "limits",
            f"{settings.max_turns} turns, tool timeout {settings.tool_timeout_s:g} s, "
            f"messages up to {settings.max_message_chars:,} chars",
        ),
        ("off", "; ".join(off) or "nothing"),
    ]


def describe(settings: Settings, services: Services) -> list[str]:
    """The startup table as log lines."""
    table = rows(settings, services)
    width = max(len(name) for name, _ in table)
    return ["Almanac configuration:"] + [f"  {name:<{width}}  {value}" for name, value in table]
