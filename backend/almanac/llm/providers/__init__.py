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
    # OpenAI-compatible servers: "true" native tool calling, "false" the text tool protocol
    # (`almanac.llm.text_tools`), "auto" native until the server refuses tools.
    native_tools: Literal["auto", "true", "false"] = "true"
    text_tool_format: Literal["concise", "verbose", "qwen_xml"] = "concise"


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
        from almanac.llm.render import ToolFormat
        from almanac.llm.text_tools import with_text_tools

        model = OpenAICompatModel(
            model=config.model,
            api_key=config.api_key,
            base_url=config.base_url,
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
        )
        return with_text_tools(model, config.native_tools, fmt=ToolFormat(config.text_tool_format))
    return OfflineModel(token_delay_s=config.offline_token_delay_s)
