"""Model providers: Anthropic, any OpenAI-compatible server, and the built-in offline model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from almanac.llm.base import Model
from almanac.llm.providers.offline import OfflineModel


@dataclass(frozen=True)
class ProviderConfig:
    """Plain values the composition root reads from `Settings`."""

    provider: Literal["anthropic", "openai", "offline"]
    model: str
    api_key: str | None = None
    base_url: str | None = None
    timeout_s: float = 120.0
    max_retries: int = 3
    offline_token_delay_s: float = 0.0


def build_model(config: ProviderConfig) -> Model:
    """The model `config` describes (vendor SDKs are imported only when used)."""
    if config.provider == "anthropic":
        from almanac.llm.providers.anthropic import AnthropicModel

        return AnthropicModel(
            api_key=config.api_key or "",
            model=config.model,
            base_url=config.base_url,
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
        )
    if config.provider == "openai":
        from almanac.llm.providers.openai_compat import OpenAICompatModel

        return OpenAICompatModel(
            model=config.model,
            api_key=config.api_key,
            base_url=config.base_url,
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
        )
    return OfflineModel(token_delay_s=config.offline_token_delay_s)
