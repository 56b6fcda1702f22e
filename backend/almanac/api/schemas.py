"""Request and response bodies (schema grammar: `XCreate`, `XUpdate`, `XPublic`, `XsPublic`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Path
from pydantic import BaseModel, Field

UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
UuidPath = Annotated[str, Path(pattern=UUID_PATTERN, max_length=36, description="A UUID.")]


class ChatCreate(BaseModel):
    message: str = Field(description="The user's message (at most MAX_MESSAGE_CHARS characters).")
    conversation_id: str | None = Field(None, description="Continue this conversation; omit to start one.")


class ToolResultPublic(BaseModel):
    id: str = Field(description="The model's tool-call ID.")
    name: str
    item_id: str = Field(description="History ID of the full result, e.g. q3-t1.")
    summary_id: str
    is_error: bool
    status: str
    summary: str | None
    duration_ms: int
    credits: int
    citations: list[dict[str, str]] = Field(default_factory=list, description="Sources: {title, url, library}.")


class ErrorInfo(BaseModel):
    code: str
    message: str


class ChatPublic(BaseModel):
    response: str
    summary: str
    conversation_id: str
    message_id: str = Field(description="History ID of the full response, e.g. q3-r.")
    summary_id: str = Field(description="History ID of its summary, e.g. q3-r-sum.")
    query_id: str
    tools_used: list[str] = Field(description="Names of the tools called, in order.")
    tool_results: list[ToolResultPublic]
    credits_used: int
    credits_remaining: int
    turns: int
    stop_reason: str
    error: ErrorInfo | None = None


class ItemPublic(BaseModel):
    id: str
    kind: str
    ref: str | None = None
    content: str
    status: str
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    is_error: bool = False
    credits: int = 0
    duration_ms: int | None = None
    created_at: datetime | None = None


class ConversationPublic(BaseModel):
    id: str
    title: str
    query_count: int
    created_at: datetime
    updated_at: datetime


class ConversationsPublic(BaseModel):
    data: list[ConversationPublic]
    count: int


class ConversationDetail(ConversationPublic):
    full: list[ItemPublic] = Field(description="Queries, tool results and responses, verbatim.")
    summarised: list[ItemPublic] = Field(description="Queries and summaries: what the model sees later.")


class ConversationUpdate(BaseModel):
    title: str = Field(min_length=1, max_length=200)


class LedgerEntryPublic(BaseModel):
    id: int
    delta: int
    bucket: str
    kind: str
    reason: str
    period: str
    conversation_id: str | None
    query_id: str | None
    item_id: str | None
    created_at: datetime


class BucketsPublic(BaseModel):
    daily: int = Field(description="Left of today's allowance (expires at 00:00 UTC).")
    pack: int = Field(description="Credits from packs and grants (never expire).")


class CreditsPublic(BaseModel):
    plan: str
    balance: int
    buckets: BucketsPublic
    daily_allowance: int
    left_today: int
    period: str = Field(description="The UTC day the allowance belongs to.")
    monthly_cap: int | None
    used_this_month: int
    left_this_month: int | None
    prices: dict[str, int]
    recent: list[LedgerEntryPublic]


class UserPublic(BaseModel):
    id: str
    email: str
    plan: str


class HealthPublic(BaseModel):
    status: str


class ApiKeyPublic(BaseModel):
    id: str
    name: str
    prefix: str = Field(description="The key's first characters, to recognise it.")
    created_at: datetime
    last_used_at: datetime | None = Field(description="Approximate (updated at most once a minute).")
    revoked_at: datetime | None
    current: bool = Field(description="The caller authenticated with this key (directly or via its session).")


class ApiKeysPublic(BaseModel):
    data: list[ApiKeyPublic]
    count: int


class ApiKeyCreate(BaseModel):
    name: str = Field("", max_length=100, description="A label for the key.")


class ApiKeyCreated(ApiKeyPublic):
    api_key: str = Field(description="The key itself: shown this once, never again.")
