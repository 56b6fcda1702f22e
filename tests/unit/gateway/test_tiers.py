"""Model names → tier → upstream and upstream model (pure)."""

import pytest

from almanac.gateway.tiers import TierMap, tier_of


@pytest.mark.parametrize(
    ("name", "tier"),
    [
        ("claude-opus-4-6", "BIG_MODEL"),
        ("claude-3-opus-20240229", "BIG_MODEL"),
        ("claude-sonnet-4-6", "MIDDLE_MODEL"),
        ("Claude-3-5-Sonnet-latest", "MIDDLE_MODEL"),
        ("claude-haiku-4-5", "SMALL_MODEL"),
        ("gpt-4o", None),
    ],
)
def test_tier_words(name: str, tier: str | None) -> None:
    assert tier_of(name) == tier


@pytest.mark.parametrize(
    ("tiers", "requested", "expected"),
    [
        (TierMap("openai"), "claude-opus-4-6", ("openai", "gpt-4o")),
        (TierMap("openai"), "claude-sonnet-4-6", ("openai", "gpt-4o")),
        (TierMap("openai"), "claude-haiku-4-5", ("openai", "gpt-4o-mini")),
        (TierMap("openai", big="big"), "claude-sonnet-4-6", ("openai", "big")),
        (TierMap("openai", "b", "m", "s"), "claude-sonnet-4-6", ("openai", "m")),
        (TierMap("openai"), "qwen3-coder", ("openai", "qwen3-coder")),
        (TierMap("anthropic"), "claude-opus-4-6", ("anthropic", "claude-opus-4-6")),
        (TierMap("anthropic", small="claude-haiku-4-5"), "claude-3-haiku", ("anthropic", "claude-haiku-4-5")),
        (TierMap("openai", big="anthropic:claude-opus-4-6"), "claude-opus-4-6", ("anthropic", "claude-opus-4-6")),
        (TierMap("anthropic", small="openai:qwen2.5:7b"), "claude-haiku-4-5", ("openai", "qwen2.5:7b")),
        (TierMap("openai", small="offline:"), "claude-haiku-4-5", ("offline", "almanac-offline")),
        (TierMap("offline"), "claude-opus-4-6", ("offline", "almanac-offline")),
        (TierMap("openai", small="llama3.1:8b"), "claude-haiku-4-5", ("openai", "llama3.1:8b")),
    ],
)
def test_routes(tiers: TierMap, requested: str, expected: tuple[str, str]) -> None:
    route = tiers.route(requested)
    assert (route.upstream, route.model) == expected
    assert route.requested == requested


def test_describe_names_each_tier() -> None:
    assert TierMap("openai", "b", "", "s").describe() == [
        ("BIG_MODEL", "openai / b"),
        ("MIDDLE_MODEL", "openai / b"),
        ("SMALL_MODEL", "openai / s"),
    ]
    assert TierMap("anthropic").describe()[0] == ("BIG_MODEL", "anthropic / the requested name")
