"""Plain values the storage layer returns, so no caller depends on SQLAlchemy objects."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class UserRecord:
    id: str
    email: str
    plan: str
    created_at: datetime
    default_strategy: str | None = None  # how their questions are answered unless a request says
    role: str = "user"  # user | admin
    disabled_at: datetime | None = None  # set: none of their keys or sessions works

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


@dataclass(frozen=True)
class ApiKeyRecord:
    id: str
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True)
class ConversationRecord:
    id: str
    user_id: str
    title: str
    query_counter: int
    created_at: datetime
    updated_at: datetime
    strategy: str | None = None  # how its questions are answered (None: the user's default)


@dataclass(frozen=True)
class ItemRecord:
    """One history item (see `memory.ids` for the ID grammar)."""

    item_id: str
    query_number: int
    kind: str
    content: str
    ref: str | None = None
    status: str = "done"
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    is_error: bool = False
    credits: int = 0
    duration_ms: int | None = None
    created_at: datetime | None = None
    model: str | None = None  # the model that wrote a response


@dataclass(frozen=True)
class AccountRecord:
    user_id: str
    plan: str
    daily_balance: int
    pack_balance: int
    daily_period: str
    month_period: str
    month_used: int

    @property
    def balance(self) -> int:
        """Everything the user can spend now."""
        return self.daily_balance + self.pack_balance


@dataclass(frozen=True)
class LedgerRecord:
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
