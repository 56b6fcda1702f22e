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
    off += services.documentation.off()
    if settings.voyage_api_key is None:
        off.append("Voyage embeddings and reranking (VOYAGE_API_KEY not set)")
    doc_source, embeddings = services.documentation.describe()
    if services.mcp is not None:
        off += [f"MCP server {s.name} ({s.detail})" for s in services.mcp.statuses() if s.state == "off"]
    vault = services.integrations
    if vault is not None and not vault.enabled:
        off.append(f"per-user integration tokens ({vault.problem})")
    if services.tools is not None:
        off += services.tools.off()
    if not settings.payments_enabled:
        off.append("payments (STRIPE_SECRET_KEY not set; plans and packs come from administrators)")
    return [
        ("database", services.database.display_url),
        ("chat model", f"{model.provider} / {model.name}"),
        ("summariser", services.summariser.name),
        ("doc source", doc_source),
        ("embeddings", embeddings),
        ("MCP servers", services.mcp.summary() if services.mcp is not None else "none"),
        ("tools", ", ".join(services.registry.names) or "none"),
        *tool_rows(services),
        ("user tokens", user_tokens(settings, services)),
        ("web UI", str(services.web_ui) if services.web_ui else "not built (run `make serve` with Node.js and npm)"),
        (
            "limits",
            f"{settings.max_turns} turns, tool timeout {settings.tool_timeout_s:g} s, "
            f"messages up to {settings.max_message_chars:,} chars",
        ),
        *gateway_rows(settings, services),
        *collaboration_rows(services),
        ("payments", payments(settings)),
        *([("operations", services.ops.describe())] if services.ops is not None else []),
        ("off", "; ".join(off) or "nothing"),
    ]


def describe(settings: Settings, services: Services) -> list[str]:
    """The startup table as log lines."""
    table = rows(settings, services)
    width = max(len(name) for name, _ in table)
    return ["Almanac configuration:"] + [f"  {name:<{width}}  {value}" for name, value in table]


def user_tokens(settings: Settings, services: Services) -> str:
    """How users' own integration tokens are kept, and whether the operator's GitHub token is shared."""
    vault = services.integrations
    kept = "off" if vault is None or not vault.enabled else f"encrypted at rest (key: {vault.key_source})"
    if settings.github_shared_token and settings.github_personal_access_token is not None:
        return f"{kept}; GitHub: users without a token of their own act with the operator's (GITHUB_SHARED_TOKEN)"
    return kept


def gateway_rows(settings: Settings, services: Services) -> list[tuple[str, str]]:
    """The gateway's tier mapping and, next to it, the boost status."""
    gateway = services.gateway
    if gateway is None:
        return []
    boosted = gateway.boost.tiers if gateway.boost is not None else frozenset()
    tiers = "; ".join(
        f"{tier} → {target}" + (" (boost)" if tier in boosted else "") for tier, target in gateway.tiers.describe()
    )
    billing = (
        f"{settings.gateway_credits_per_1k_tokens:g} credits per 1,000 tokens"
        if settings.gateway_credits_per_1k_tokens > 0
        else "usage recorded, not billed"
    )
    if gateway.boost is not None:
        boost = (
            f"on for {', '.join(sorted(boosted))}: planner {settings.boost_model} at {settings.boost_base_url} "
            f"(timeout {settings.boost_timeout_s:g} s, at most {gateway.boost.max_loops} loops)"
        )
    elif settings.boost_base_url:
        boost = f"configured ({settings.boost_model}) but enabled for no tier (ENABLE_BOOST_SUPPORT=NONE)"
    else:
        boost = "not configured (set BOOST_BASE_URL, BOOST_MODEL and ENABLE_BOOST_SUPPORT to turn it on)"
    return [
        ("gateway", f"/v1/messages → {settings.resolved_gateway_upstream} by default; {billing}"),
        ("gateway tiers", tiers),
        ("boost", boost),
    ]


def payments(settings: Settings) -> str:
    """Whether payments run, and against which Stripe API."""
    if not settings.payments_enabled:
        return "off"
    where = settings.stripe_api_base or "Stripe"
    return f"Stripe Checkout and portal via {where}; webhook at /api/billing/webhook"


def tool_rows(services: Services) -> list[tuple[str, str]]:
    """The code sandbox (how it runs, or off; one row per protection that is active or not) and the
    SQL tool's database (password masked)."""
    if services.tools is None:
        return []
    rows = [("code sandbox", services.tools.describe_sandbox())]
    rows += [("sandbox limits", line) for line in services.tools.describe_protections()]
    if (database := services.tools.describe_sql()) is not None:
        rows.append(("sql_query", f"{database} (read-only connection)"))
    return rows


def collaboration_rows(services: Services) -> list[tuple[str, str]]:
    """Collaborate's helper and pairs, how relevance is measured, and the models discussions may use."""
    strategies, discussions = services.chat.strategies, services.discussions
    collaboration = strategies.collaboration
    if not collaboration.enabled:
        helping = f"off ({collaboration.source}: enabled: false); `collaborate` answers like `direct`"
    else:
        helper = strategies.helper.name if strategies.helper is not None else "the chat model itself"
        pairs = ", ".join(f"{p.primary} → {p.secondary}" for p in collaboration.pairs)
        relevance = getattr(strategies.relevance, "method", "lexical overlap (no embedder configured)")
        helping = (
            f"helper {helper}; threshold {collaboration.threshold:g}; retries per answer: {collaboration.max_retries}"
            + (f"; pairs {pairs}" if pairs else "")
            + f"; relevance by {relevance}"
        )
    rows = [("collaboration", helping)]
    if discussions is not None:
        names = ", ".join(entry.name for entry in discussions.catalog.entries())
        limits = discussions.limits.spec
        rows.append(
            ("discussions", f"models {names}; up to {limits.max_turns} turns, {limits.max_participants} participants")
        )
    return rows
