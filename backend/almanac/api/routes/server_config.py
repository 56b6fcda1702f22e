"""What this server offers the person using it: which model answers (the built-in offline one or a
real one), the answer strategies, whether it takes payments, whether it has GitHub tools, and the
questions a new chat suggests. The web UI shapes itself by it (say the model is offline where the
user types, offer only what works)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from almanac.api.deps import CurrentUser, ServicesDep
from almanac.api.responses import errors
from almanac.api.routes.integrations import github_available
from almanac.api.schemas import StrategyName
from almanac.chat.suggestions import suggestions_for

router = APIRouter(prefix="/api", tags=["account"])
STRATEGIES: list[StrategyName] = ["direct", "boost", "collaborate"]


class ChatModelPublic(BaseModel):
    name: str = Field(description="The chat model's name, e.g. `claude-haiku-4-5` or `almanac-offline`.")
    provider: str = Field(description="`anthropic`, `openai` (any OpenAI-compatible server) or `offline`.")
    offline: bool = Field(
        description="The built-in offline model: it answers documentation questions by quoting the local index "
        "and cannot compose answers of its own. Connecting a real model takes ANTHROPIC_API_KEY, or "
        "OPENAI_BASE_URL (with OPENAI_API_KEY and OPENAI_MODEL), and a restart."
    )


class StrategiesPublic(BaseModel):
    default: StrategyName = Field(description="The server's default (a user's own default is in GET /api/me).")
    available: list[StrategyName]


class ServerConfigPublic(BaseModel):
    chat_model: ChatModelPublic
    strategies: StrategiesPublic
    payments_enabled: bool = Field(description="Plans and credit packs can be bought here (Stripe is configured).")
    github_tools: bool = Field(
        description="GitHub tools run with each user's own token (GET /api/integrations/github)."
    )
    suggestions: list[str] = Field(description="Questions a new chat suggests: ones this chat model answers well.")


@router.get("/config", response_model=ServerConfigPublic, responses=errors(401))
async def get_config(_: CurrentUser, services: ServicesDep) -> ServerConfigPublic:
    """What this server offers: the chat model (and whether it is the offline one), the strategies,
    payments and GitHub tools."""
    model = services.model
    offline = model.provider == "offline"
    return ServerConfigPublic(
        chat_model=ChatModelPublic(name=model.name, provider=model.provider, offline=offline),
        strategies=StrategiesPublic(
            default=services.chat.strategies.default,
            available=STRATEGIES,
        ),
        payments_enabled=services.billing is not None and services.billing.enabled,
        github_tools=github_available(services),
        suggestions=suggestions_for(offline=offline),
    )
