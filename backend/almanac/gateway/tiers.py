"""Which upstream and model answer a requested model name (pure).

As in the proxy the seed extends: a name containing `opus` is the BIG tier, `sonnet` MIDDLE,
`haiku` SMALL. On an OpenAI-compatible upstream each tier becomes its configured model (BIG_MODEL
default `gpt-4o`, MIDDLE_MODEL default BIG_MODEL, SMALL_MODEL default `gpt-4o-mini`); on an
Anthropic upstream a tier is mapped only when its setting is given (the name passes through
otherwise). A tier setting may name its own upstream with a prefix: `anthropic:claude-opus-4-6`,
`openai:qwen3-coder`, `offline:`. A name with no tier word is passed to the default upstream
unchanged, so a client can name any model the upstream serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Upstream = Literal["openai", "anthropic", "offline"]
Tier = Literal["BIG_MODEL", "MIDDLE_MODEL", "SMALL_MODEL"]
TIERS: tuple[Tier, ...] = ("BIG_MODEL", "MIDDLE_MODEL", "SMALL_MODEL")
_WORDS: tuple[tuple[str, Tier], ...] = (("opus", "BIG_MODEL"), ("sonnet", "MIDDLE_MODEL"), ("haiku", "SMALL_MODEL"))
_UPSTREAMS: tuple[Upstream, ...] = ("openai", "anthropic", "offline")
OFFLINE_MODEL = "almanac-offline"


@dataclass(frozen=True)
class Route:
    requested: str
    tier: Tier | None
    upstream: Upstream
    model: str


def tier_of(name: str) -> Tier | None:
    """The tier a requested model name belongs to, or None."""
    lowered = name.lower()
    return next((tier for word, tier in _WORDS if word in lowered), None)


@dataclass(frozen=True)
class TierMap:
    default_upstream: Upstream
    big: str = ""
    middle: str = ""
    small: str = ""

    def target(self, tier: Tier) -> str:
        """The tier's setting, with the OpenAI defaults filled in for an OpenAI upstream."""
        value = {"BIG_MODEL": self.big, "MIDDLE_MODEL": self.middle or self.big, "SMALL_MODEL": self.small}[tier]
        if value or self.default_upstream != "openai":
            return value
        return {"BIG_MODEL": self.big or "gpt-4o", "MIDDLE_MODEL": self.big or "gpt-4o"}.get(tier, "gpt-4o-mini")

    def route(self, requested: str) -> Route:
        """Where a request for `requested` goes."""
        tier = tier_of(requested)
        target = self.target(tier) if tier else ""
        upstream, model = split_target(target, self.default_upstream)
        if upstream == "offline":
            return Route(requested, tier, "offline", OFFLINE_MODEL)
        return Route(requested, tier, upstream, model or requested)

    def describe(self) -> list[tuple[str, str]]:
        """(tier, where it goes) for the startup table."""
        rows: list[tuple[str, str]] = []
        for tier in TIERS:
            route = self.route({"BIG_MODEL": "opus", "MIDDLE_MODEL": "sonnet", "SMALL_MODEL": "haiku"}[tier])
            shown = "the requested name" if route.model in ("opus", "sonnet", "haiku") else route.model
            rows.append((tier, f"{route.upstream} / {shown}"))
        return rows


def split_target(target: str, default: Upstream) -> tuple[Upstream, str]:
    """`anthropic:claude-x` → ("anthropic", "claude-x"); no known prefix → (default, target)."""
    prefix, colon, rest = target.partition(":")
    if colon and prefix.strip().lower() in _UPSTREAMS:
        return prefix.strip().lower(), rest.strip()  # type: ignore[return-value]
    return default, target
