"""The relational schema (SQLAlchemy 2 declarative). Migrations in `migrations/` create it.

Money and history are append-friendly: `ledger_entries` is never updated or deleted, and the
balance columns of `credit_accounts` always equal the ledger's sums per bucket.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from almanac.text.clean import clean_json, clean_text


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp that is always timezone-aware UTC in Python, on SQLite as on PostgreSQL."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


class CleanString(TypeDecorator[str]):
    """A string column that stores any Python text: NUL and lone surrogates become U+FFFD on the way
    in (`text.clean`), and a value longer than the column is cut to its length (PostgreSQL refuses
    it, SQLite would keep it), so no writer — model output, tool output, a client's names — can make
    a write fail, lose the rows written with it, or store what a later read cannot encode. Values
    that reach these columns from outside are validated long before; this is the floor under them."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        if not isinstance(value, str):
            return value
        length = getattr(self.impl, "length", None)
        return clean_text(value[:length] if length and len(value) > length else value)


class CleanText(CleanString):
    """`CleanString` of unbounded length (TEXT)."""

    impl = Text
    cache_ok = True


class CleanJSON(TypeDecorator[Any]):
    """A JSON column whose strings (keys and values) are cleaned like `CleanString`'s."""

    impl = JSON
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return clean_json(value)


# BIGINT on PostgreSQL, INTEGER (the rowid alias) on SQLite, so autoincrement works on both.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime, dict[str, Any]: CleanJSON}


class User(Base):
    __tablename__ = "users"

    id: Mapped[str] = mapped_column(CleanString(36), primary_key=True)
    email: Mapped[str] = mapped_column(CleanString(320), unique=True)
    plan: Mapped[str] = mapped_column(CleanString(16), default="free")
    default_strategy: Mapped[str | None] = mapped_column(CleanString(16), default=None)  # None: the server's default
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    role: Mapped[str] = mapped_column(CleanString(16), default="user", server_default="user")  # user | admin
    disabled_at: Mapped[datetime | None] = mapped_column(default=None)  # set: no key or session of theirs works


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(CleanString(36), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    key_hash: Mapped[str] = mapped_column(CleanString(64), unique=True)
    prefix: Mapped[str] = mapped_column(CleanString(16))
    name: Mapped[str] = mapped_column(CleanString(100), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)


class WebSession(Base):
    """A browser session: the cookie holds a random token, the table only its SHA-256."""

    __tablename__ = "web_sessions"

    token_hash: Mapped[str] = mapped_column(CleanString(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    api_key_id: Mapped[str | None] = mapped_column(
        ForeignKey("api_keys.id", ondelete="CASCADE"), index=True, default=None
    )  # None: made by the local sign-in link
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(index=True)


class CreditAccount(Base):
    """Per-user balances. `last_debit_daily` records how much of the latest debit came from the
    daily allowance, so the ledger rows can attribute it (see `storage.credits.debit`)."""

    __tablename__ = "credit_accounts"
    __table_args__ = (
        CheckConstraint("daily_balance >= 0", name="ck_daily_balance_nonnegative"),
        CheckConstraint("pack_balance >= 0", name="ck_pack_balance_nonnegative"),
    )

    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    daily_balance: Mapped[int] = mapped_column(Integer, default=0)
    pack_balance: Mapped[int] = mapped_column(Integer, default=0)
    daily_period: Mapped[str] = mapped_column(CleanString(10), default="")
    month_period: Mapped[str] = mapped_column(CleanString(7), default="")
    month_used: Mapped[int] = mapped_column(Integer, default=0)
    last_debit_daily: Mapped[int] = mapped_column(Integer, default=0)


class LedgerEntry(Base):
    __tablename__ = "ledger_entries"
    __table_args__ = (Index("ix_ledger_user_id_id", "user_id", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(CleanString(36))
    delta: Mapped[int] = mapped_column(Integer)
    bucket: Mapped[str] = mapped_column(CleanString(8))
    kind: Mapped[str] = mapped_column(CleanString(16))
    reason: Mapped[str] = mapped_column(CleanString(200), default="")
    period: Mapped[str] = mapped_column(CleanString(10), default="")
    conversation_id: Mapped[str | None] = mapped_column(CleanString(36), default=None)
    query_id: Mapped[str | None] = mapped_column(CleanString(16), default=None)
    item_id: Mapped[str | None] = mapped_column(CleanString(32), default=None)
    idem_key: Mapped[str | None] = mapped_column(CleanString(120), default=None, unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Conversation(Base):
    __tablename__ = "conversations"
    __table_args__ = (Index("ix_conversations_user_updated", "user_id", "updated_at"),)

    id: Mapped[str] = mapped_column(CleanString(36), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    title: Mapped[str] = mapped_column(CleanString(200), default="")
    query_counter: Mapped[int] = mapped_column(Integer, default=0)
    strategy: Mapped[str | None] = mapped_column(CleanString(16), default=None)  # None: the user's default
    lock_token: Mapped[str | None] = mapped_column(CleanString(36), default=None)
    locked_until: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class HistoryItem(Base):
    """One entry of the dual-track history: a query, tool result, response or a summary of one."""

    __tablename__ = "history_items"
    __table_args__ = (
        UniqueConstraint("conversation_id", "item_id", name="uq_history_items_conversation_item"),
        Index("ix_history_items_conversation_seq", "conversation_id", "seq"),
    )

    seq: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    item_id: Mapped[str] = mapped_column(CleanString(32))
    query_number: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(CleanString(20))
    ref: Mapped[str | None] = mapped_column(CleanString(32), default=None)
    content: Mapped[str] = mapped_column(CleanText, default="")
    status: Mapped[str] = mapped_column(CleanString(12), default="done")
    tool_name: Mapped[str | None] = mapped_column(CleanString(128), default=None)
    tool_input: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    tool_use_id: Mapped[str | None] = mapped_column(CleanString(100), default=None)
    is_error: Mapped[bool] = mapped_column(Boolean, default=False)
    credits: Mapped[int] = mapped_column(Integer, default=0)
    duration_ms: Mapped[int | None] = mapped_column(Integer, default=None)
    model: Mapped[str | None] = mapped_column(CleanString(200), default=None)  # a response's model
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class DocCacheEntry(Base):
    """A cached doc-source response (e.g. a Context7 search or context call), valid until `expires_at`."""

    __tablename__ = "doc_cache"

    key: Mapped[str] = mapped_column(CleanString(64), primary_key=True)
    source: Mapped[str] = mapped_column(CleanString(20))
    status: Mapped[int] = mapped_column(Integer)
    body: Mapped[str] = mapped_column(CleanText)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column()


class CachedEmbedding(Base):
    """One embedding (float32 bytes) per (model, SHA-256 of the text): a chunk is embedded once."""

    __tablename__ = "embedding_cache"

    model_id: Mapped[str] = mapped_column(CleanString(100), primary_key=True)
    content_hash: Mapped[str] = mapped_column(CleanString(64), primary_key=True)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class DocLibrary(Base):
    """A library of the local doc source: an installed distribution or a docs folder."""

    __tablename__ = "doc_libraries"

    id: Mapped[str] = mapped_column(CleanString(200), primary_key=True)
    title: Mapped[str] = mapped_column(CleanString(200))
    description: Mapped[str] = mapped_column(CleanText, default="")
    kind: Mapped[str] = mapped_column(CleanString(20))
    version: Mapped[str] = mapped_column(CleanString(50), default="")
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)


class DocChunk(Base):
    """A chunk of the local doc index; `seq` order is the order of the index's rows."""

    __tablename__ = "doc_chunks"
    __table_args__ = (Index("ix_doc_chunks_library", "library_id"),)

    seq: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    library_id: Mapped[str] = mapped_column(CleanString(200))
    position: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(CleanText, default="")
    source_url: Mapped[str | None] = mapped_column(CleanText, default=None)
    text: Mapped[str] = mapped_column(CleanText)
    content_hash: Mapped[str] = mapped_column(CleanString(64))


class DocIndex(Base):
    """The serialised local index: BM25 statistics and the embedding matrix, aligned with `doc_chunks`."""

    __tablename__ = "doc_index"

    name: Mapped[str] = mapped_column(CleanString(50), primary_key=True)
    built_at: Mapped[datetime] = mapped_column(default=utcnow)
    chunk_count: Mapped[int] = mapped_column(Integer)
    fingerprint: Mapped[str] = mapped_column(CleanString(64))
    model_id: Mapped[str | None] = mapped_column(CleanString(100), default=None)
    bm25: Mapped[bytes] = mapped_column(LargeBinary)
    vectors: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    popularity: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)  # API → modules using it (JSON)
    reference: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)  # API → Python docs' text (JSON)


class GatewayUsage(Base):
    """One `/v1/messages` request through the gateway: who, which model where, tokens, latency."""

    __tablename__ = "gateway_usage"
    __table_args__ = (Index("ix_gateway_usage_user_created", "user_id", "created_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    api_key_id: Mapped[str | None] = mapped_column(CleanString(36), default=None)
    model: Mapped[str] = mapped_column(CleanString(200))
    upstream: Mapped[str] = mapped_column(CleanString(20))
    upstream_model: Mapped[str] = mapped_column(CleanString(200))
    stream: Mapped[bool] = mapped_column(Boolean, default=False)
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[int] = mapped_column(Integer, default=0)
    first_token_ms: Mapped[int | None] = mapped_column(Integer, default=None)
    status: Mapped[int] = mapped_column(Integer, default=200)
    error_type: Mapped[str | None] = mapped_column(CleanString(40), default=None)
    planner_model: Mapped[str | None] = mapped_column(CleanString(200), default=None)
    planner_input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    planner_output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    # The upstream's (or the planner's) tokens were estimated: the server reported none.
    usage_estimated: Mapped[bool] = mapped_column(Boolean, default=False)
    planner_usage_estimated: Mapped[bool] = mapped_column(Boolean, default=False)
    boost_loops: Mapped[int] = mapped_column(Integer, default=0)
    boost_outcome: Mapped[str | None] = mapped_column(CleanString(20), default=None)
    credits: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class IntegrationToken(Base):
    """A user's own token for an outside service (GitHub), encrypted with the server's key: the
    token itself is never stored in clear (`integrations/crypto.py`); `masked` is what its owner sees."""

    __tablename__ = "integration_tokens"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    integration: Mapped[str] = mapped_column(CleanString(32), primary_key=True)
    ciphertext: Mapped[bytes] = mapped_column(LargeBinary)
    key_id: Mapped[str] = mapped_column(CleanString(32))  # which server key encrypted it
    masked: Mapped[str] = mapped_column(CleanString(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class StripeCustomer(Base):
    """The Stripe customer that pays for a user (created at their first checkout)."""

    __tablename__ = "stripe_customers"

    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    customer_id: Mapped[str] = mapped_column(CleanString(100), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class StripeSubscription(Base):
    """A user's Stripe subscription as the latest applied event described it. `event_created` is
    that event's Stripe timestamp: an older event never overwrites a newer state."""

    __tablename__ = "stripe_subscriptions"

    subscription_id: Mapped[str] = mapped_column(CleanString(100), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(CleanString(24))
    cancel_at_period_end: Mapped[bool] = mapped_column(Boolean, default=False)
    current_period_end: Mapped[datetime | None] = mapped_column(default=None)
    event_created: Mapped[int] = mapped_column(BigInteger, default=0)
    payment_failed_at: Mapped[datetime | None] = mapped_column(default=None)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class BillingEvent(Base):
    """A Stripe event that was applied (or deliberately skipped): its ID makes every event count once."""

    __tablename__ = "billing_events"

    event_id: Mapped[str] = mapped_column(CleanString(100), primary_key=True)
    type: Mapped[str] = mapped_column(CleanString(100))
    created: Mapped[int] = mapped_column(BigInteger)  # Stripe's timestamp of the event
    user_id: Mapped[str | None] = mapped_column(CleanString(36), default=None, index=True)
    outcome: Mapped[str] = mapped_column(CleanString(200), default="")
    processed_at: Mapped[datetime] = mapped_column(default=utcnow)


class AuditEntry(Base):
    """One administrator's action: who, what, when and on whom. Never updated or deleted."""

    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_target", "target_user_id", "id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    actor_id: Mapped[str] = mapped_column(CleanString(36))
    actor_email: Mapped[str] = mapped_column(CleanString(320))
    action: Mapped[str] = mapped_column(CleanString(40))
    target_user_id: Mapped[str | None] = mapped_column(CleanString(36), default=None)
    target_email: Mapped[str | None] = mapped_column(CleanString(320), default=None)
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ModelUsage(Base):
    """Tokens one model used for one chat query (written once by the query's finish step)."""

    __tablename__ = "model_usage"
    __table_args__ = (
        UniqueConstraint("conversation_id", "query_id", "role", "model", name="uq_model_usage_query_role_model"),
        Index("ix_model_usage_user_created", "user_id", "created_at"),
        Index("ix_model_usage_created", "created_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    conversation_id: Mapped[str] = mapped_column(CleanString(36))
    query_id: Mapped[str] = mapped_column(CleanString(16))
    role: Mapped[str] = mapped_column(CleanString(16))  # chat | planner | helper
    provider: Mapped[str] = mapped_column(CleanString(20))
    model: Mapped[str] = mapped_column(CleanString(200))
    calls: Mapped[int] = mapped_column(Integer, default=1)
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    # Calls whose tokens were estimated here because the server reported none (llm/usage.py).
    estimated_calls: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Discussion(Base):
    """A discussion between models: what was asked (`config`: participants, tools, collaboration),
    how far it got and how it ended. While it runs it holds a lease it renews; a discussion whose
    process died is found by its expired lease and settled as interrupted."""

    __tablename__ = "discussions"
    __table_args__ = (Index("ix_discussions_user_updated", "user_id", "updated_at"),)

    id: Mapped[str] = mapped_column(CleanString(36), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    title: Mapped[str] = mapped_column(CleanString(200), default="")
    goal: Mapped[str] = mapped_column(CleanText)
    turns: Mapped[int] = mapped_column(Integer)
    config: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(CleanString(16), default="running")  # running | done | stopped | interrupted
    stop_reason: Mapped[str] = mapped_column(CleanString(32), default="")
    turns_done: Mapped[int] = mapped_column(Integer, default=0)
    credits_used: Mapped[int] = mapped_column(Integer, default=0)
    lease_until: Mapped[datetime | None] = mapped_column(default=None, index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class DiscussionItem(Base):
    """One entry of a discussion, with the IDs of a chat's history: turn 3's message is `q3-r` (its
    `speaker` the participant's index, `model` the model that spoke), its tool results `q3-t1`… and
    their summaries `q3-t1-sum`."""

    __tablename__ = "discussion_items"
    __table_args__ = (
        UniqueConstraint("discussion_id", "item_id", name="uq_discussion_items_discussion_item"),
        Index("ix_discussion_items_discussion_seq", "discussion_id", "seq"),
    )

    seq: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    discussion_id: Mapped[str] = mapped_column(ForeignKey("discussions.id", ondelete="CASCADE"))
    item_id: Mapped[str] = mapped_column(CleanString(32))
    turn: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(CleanString(20))
    ref: Mapped[str | None] = mapped_column(CleanString(32), default=None)
    speaker: Mapped[int | None] = mapped_column(Integer, default=None)
    model: Mapped[str | None] = mapped_column(CleanString(200), default=None)
    content: Mapped[str] = mapped_column(CleanText, default="")
    status: Mapped[str] = mapped_column(CleanString(12), default="done")
    tool_name: Mapped[str | None] = mapped_column(CleanString(128), default=None)
    tool_input: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    tool_use_id: Mapped[str | None] = mapped_column(CleanString(100), default=None)
    is_error: Mapped[bool] = mapped_column(Boolean, default=False)
    credits: Mapped[int] = mapped_column(Integer, default=0)
    duration_ms: Mapped[int | None] = mapped_column(Integer, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
