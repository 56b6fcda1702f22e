"""Request and response bodies (schema grammar: `XCreate`, `XUpdate`, `XPublic`, `XsPublic`).

Every constraint the API enforces on its input is stated here, so the OpenAPI schema says it too:
texts are bounded and carry no NUL character (PostgreSQL cannot store one) and no lone UTF-16
surrogate (no database can: pydantic refuses them in any constrained string); required texts are
not blank; IDs match their patterns. A request that breaks one gets a 4xx naming the field before
any route runs, on every database alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Path, Query
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model, model_validator

UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
ITEM_ID_PATTERN = r"^q[1-9][0-9]{0,8}(-(t[1-9][0-9]{0,8}|r))?(-sum)?$"
NO_NUL_PATTERN = r"^[^\x00]*$"
# At least one character that `str.strip()` keeps, spelled out: what `\s` means differs between
# regex engines (Python, Rust in pydantic-core, ECMAScript in JSON Schema) on \x1c-\x1f and \x85.
_BLANK = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NOT_BLANK_PATTERN = rf"^[^\x00]*[^\x00{_BLANK}][^\x00]*$"
PATTERN_MESSAGES = {
    UUID_PATTERN: "must be a UUID such as 0b7c6f1e-3f4a-4c2e-9d1a-2b3c4d5e6f70",
    ITEM_ID_PATTERN: "must be an item ID such as q3, q3-t1, q3-r or q3-r-sum",
    NO_NUL_PATTERN: "must not contain NUL characters",
    NOT_BLANK_PATTERN: "must contain some text (not only spaces) and no NUL characters",
}
MAX_OFFSET = 1_000_000_000  # far beyond any real list; keeps OFFSET inside every database's integer range

UuidPath = Annotated[str, Path(pattern=UUID_PATTERN, max_length=36, description="A UUID.")]
ConversationIdPath = Annotated[
    str, Path(pattern=UUID_PATTERN, max_length=36, description="The conversation's ID (a UUID).")
]
ItemIdPath = Annotated[
    str, Path(pattern=ITEM_ID_PATTERN, max_length=32, description="A history item's ID: q3, q3-t1, q3-r, q3-r-sum…")
]


def _whole_float_as_int(value: Any) -> Any:
    """JSON Schema's `integer` admits 14.0 (a number without a fractional part): so do we."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# An integer field that refuses strings and booleans ("3", true) but takes any JSON number JSON
# Schema calls an integer, 3.0 included — what the OpenAPI schema promises, a client may send.
WholeNumber = Annotated[int, BeforeValidator(_whole_float_as_int)]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="How many to skip.")]


class ChatCreate(BaseModel):
    """A message to answer. `message`'s upper bound is MAX_MESSAGE_CHARS: the model each app
    validates with comes from `chat_create_model`, so its OpenAPI schema states the configured limit."""

    message: str = Field(
        min_length=1,
        pattern=NOT_BLANK_PATTERN,
        description="The user's message (at most MAX_MESSAGE_CHARS characters; longer gets 413).",
    )
    conversation_id: str | None = Field(
        None, pattern=UUID_PATTERN, max_length=36, description="Continue this conversation; omit to start one."
    )
    strategy: Literal["direct", "boost", "collaborate"] | None = Field(
        None,
        description="How to answer: `direct` (the chat model with the tools), `boost` (a planner model guides "
        "it; `plan` events show the plan) or `collaborate` (a helper model is asked when the chat model is "
        "stuck; `escalation` events). Omit for the conversation's strategy (PATCH /api/conversations/{id}), else "
        "the user's default (PATCH /api/me), else the server's. A new conversation keeps the strategy it was "
        "started with.",
    )


def chat_create_model(max_message_chars: int) -> type[ChatCreate]:
    """`ChatCreate` with `message` bounded by the configured MAX_MESSAGE_CHARS."""
    message = Field(
        min_length=1,
        max_length=max_message_chars,
        pattern=NOT_BLANK_PATTERN,
        description=f"The user's message, at most {max_message_chars:,} characters (longer gets 413).",
    )
    model: type[ChatCreate] = create_model(
        "ChatCreate", __base__=ChatCreate, __module__=__name__, message=(str, message)
    )
    return model


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
    summary: str | None = Field(
        description="The answer's summary (what later queries see), or null while it is still being "
        "written: the answer is returned as soon as it is complete; the summary is stored when ready "
        "(GET /api/conversations/{id}/items/{summary_id}, status `pending` until then)."
    )
    conversation_id: str
    message_id: str = Field(description="History ID of the full response, e.g. q3-r.")
    summary_id: str = Field(description="History ID of its summary, e.g. q3-r-sum.")
    query_id: str
    tools_used: list[str] = Field(description="Names of the tools called, in order.")
    tool_results: list[ToolResultPublic]
    credits_used: int
    credits_remaining: int
    turns: int
    stop_reason: str = Field(
        description="end_turn, turn_limit, error, cancelled, or `declined` / `refusal`: the model said it cannot "
        "answer, and the question's base price was refunded."
    )
    credit_limit: int = Field(0, description="Most credits this question could cost (MAX_QUERY_CREDITS; 0: none).")
    credit_limit_reached: bool = Field(False, description="Some tool call was not run because of that limit.")
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
    model: str | None = Field(None, description="A response's model (null for other items and older answers).")


StrategyName = Literal["direct", "boost", "collaborate"]


class ConversationPublic(BaseModel):
    id: str
    title: str
    query_count: int
    created_at: datetime
    updated_at: datetime
    strategy: StrategyName | None = Field(
        None,
        description="How this conversation's questions are answered unless a request says otherwise; null: the "
        "user's default (PATCH /api/me), else the server's.",
    )


class ConversationsPublic(BaseModel):
    data: list[ConversationPublic]
    count: int


class ConversationDetail(ConversationPublic):
    full: list[ItemPublic] = Field(description="Queries, tool results and responses, verbatim.")
    summarised: list[ItemPublic] = Field(description="Queries and summaries: what the model sees later.")


class ConversationUpdate(BaseModel):
    """What to change: the title, the strategy (null: back to the user's default), or both."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    title: str = Field(  # type: ignore[assignment]
        None,  # omitted: unchanged (null is refused: a conversation always has a title)
        min_length=1,
        max_length=200,
        pattern=NOT_BLANK_PATTERN,
        description="The new title.",
    )
    strategy: StrategyName | None = Field(
        None,
        description="How to answer this conversation's questions: direct, boost or collaborate; null: the default.",
    )

    @model_validator(mode="after")
    def _changes_something(self) -> ConversationUpdate:
        if not self.model_fields_set:
            raise ValueError("nothing to change: send a title or a strategy")
        return self


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
    role: Literal["user", "admin"] = Field("user", description="`admin`: may use /api/admin (the web UI's Admin page).")
    default_strategy: Literal["direct", "boost", "collaborate"] | None = Field(
        None, description="How this user's questions are answered by default (null: the server's default)."
    )


class UserUpdate(BaseModel):
    default_strategy: Literal["direct", "boost", "collaborate"] | None = Field(
        description="How to answer this user's questions unless a request says otherwise; null: the server's default."
    )


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
    name: str = Field("", max_length=100, pattern=NO_NUL_PATTERN, description="A label for the key.")


class ApiKeyCreated(ApiKeyPublic):
    api_key: str = Field(description="The key itself: shown this once, never again.")


class FieldErrorPublic(BaseModel):
    field: str = Field(description="The field at fault, e.g. `message`, `conversation_id`, `offset`.")
    message: str


class ErrorDetailPublic(BaseModel):
    model_config = ConfigDict(extra="allow")

    code: str = Field(description="Machine-readable, e.g. `conversation_not_found`.")
    message: str
    field: str | None = Field(None, description="The field at fault, when one is.")


class ErrorPublic(BaseModel):
    """Every error response: `{"error": {"code", "message", ...}}`."""

    model_config = ConfigDict(extra="allow")

    error: ErrorDetailPublic


class ValidationDetailPublic(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ValidationErrorDetail(ErrorDetailPublic):
    fields: list[FieldErrorPublic] = Field(description="Each field at fault.")


class ValidationErrorPublic(BaseModel):
    """422: the request does not match the schema; `error.fields` names each field at fault."""

    error: ValidationErrorDetail
    detail: list[ValidationDetailPublic] = Field(description="FastAPI's usual list, for clients that read it.")


class InsufficientCreditsPublic(ErrorPublic):
    """402: what the query needs, what is left and how to get more (`error.payments_enabled`: whether
    this server sells plans and packs, or its operator grants credits)."""

    balance: int
    needed: int
    how_to_get_more: str


class IntegrationTokenUpdate(BaseModel):
    """`PUT /api/integrations/github`: the caller's own token (checked, then stored encrypted)."""

    token: str = Field(
        min_length=1,
        max_length=300,
        pattern=NO_NUL_PATTERN,
        description="A GitHub personal access token: `ghp_…` (classic) or `github_pat_…` (fine-grained); "
        "`gho_…` / `ghu_…` tokens work too. Never shown again, only masked.",
    )


class IntegrationPublic(BaseModel):
    """The caller's own token for an integration, masked."""

    connected: bool = Field(description="A token of the caller's is stored and usable.")
    masked: str | None = Field(description="The token's type prefix and last four characters, e.g. `ghp_…a1B2`.")
    updated_at: datetime | None = Field(description="When the token was connected or last replaced.")
    shared_token_available: bool = Field(
        description="The operator's token serves users who have none of their own (GITHUB_SHARED_TOKEN=true)."
    )
    available: bool = Field(
        False,
        description="This server runs GitHub tools with users' own tokens (its GitHub MCP server is configured and "
        "started); when false, a token cannot be saved (409 `github_unavailable`).",
    )


# --- payments, usage and admin ---------------------------------------------------------------------


class CheckoutCreate(BaseModel):
    product: Literal["pro", "pack"] = Field(
        description="`pro`: the Pro plan, a monthly subscription; `pack`: 500 credits that never expire, paid once."
    )


class RedirectPublic(BaseModel):
    url: str = Field(description="Where to send the browser (a Stripe page).")


class ProductPublic(BaseModel):
    id: Literal["pro", "pack"]
    name: str
    price_usd: int
    interval: Literal["month"] | None = Field(description="`month` for a subscription; null for a one-time purchase.")
    credits: int = Field(description="Pro: credits a day; a pack: credits added once.")
    description: str


class SubscriptionPublic(BaseModel):
    status: str = Field(description="Stripe's status: active, trialing, past_due, unpaid, canceled, incomplete…")
    cancel_at_period_end: bool = Field(description="Cancelled: Pro ends when the paid period does.")
    current_period_end: datetime | None
    payment_failed: bool = Field(description="The latest renewal payment failed; Stripe is retrying it.")


class BillingPublic(BaseModel):
    payments_enabled: bool = Field(description="This server takes payments (Stripe is configured).")
    plan: str
    subscription: SubscriptionPublic | None
    portal_available: bool = Field(description="The caller has paid through Stripe before: the portal can open.")
    products: list[ProductPublic]


class WebhookPublic(BaseModel):
    received: bool
    duplicate: bool = Field(description="The event had been applied before; nothing changed.")


class UsageDayPublic(BaseModel):
    day: str = Field(description="A UTC day, YYYY-MM-DD.")
    credits: int
    daily: int = Field(description="Of which from the day's allowance.")
    pack: int = Field(description="Of which from packs and grants.")


class UsageItemPublic(BaseModel):
    kind: Literal["tool", "question", "discussion", "gateway"] = Field(
        description="`tool`: calls of one tool; `question`: the base price of questions; `discussion`: the price of "
        "discussion turns; `gateway`: /v1/messages."
    )
    name: str | None = Field(
        description="The tool's name (kept after its conversation is deleted; null only for calls paid before the "
        "range began)."
    )
    calls: int
    credits: int


class UsageModelPublic(BaseModel):
    source: Literal["chat", "gateway"]
    role: str = Field(description="chat: `chat`, `planner` or `helper`; gateway: `request` or `planner`.")
    provider: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    estimated_calls: int = Field(
        0,
        description="Of `calls`, those whose server reported no usage: their tokens were counted by Almanac "
        "(a conservative estimate) and are included in the totals.",
    )
    estimated: bool = Field(
        False, description="True when any of the tokens shown are estimates (`estimated_calls` > 0)."
    )


class UsageQueryPublic(BaseModel):
    user_id: str
    email: str
    conversation_id: str
    query_id: str
    day: str
    credits: int
    title: str | None = Field(description="The conversation's (or discussion's) title; null when it was deleted.")
    question: str | None = Field(description="The question's first 200 characters, when still stored.")
    kind: Literal["chat", "discussion"] = Field(
        "chat", description="`chat`: a question of a conversation; `discussion`: a turn (`query_id` q3 is turn 3)."
    )


class UsageUserPublic(BaseModel):
    user_id: str
    email: str
    credits: int


class UsagePublic(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: str = Field(alias="from", description="First UTC day reported (YYYY-MM-DD).")
    to: str = Field(description="Last UTC day reported (YYYY-MM-DD), inclusive.")
    credits: int = Field(description="Credits spent in the range (net of refunds).")
    days: list[UsageDayPublic] = Field(description="Every day of the range, oldest first.")
    items: list[UsageItemPublic] = Field(description="Credits per tool, per question base and for the gateway.")
    models: list[UsageModelPublic] = Field(description="Tokens per model, chat queries and gateway requests.")
    top_queries: list[UsageQueryPublic] = Field(description="The questions that cost most, most first.")
    top_users: list[UsageUserPublic] = Field(description="Service-wide reports only: who spent most.")


class AdminUserPublic(BaseModel):
    id: str
    email: str
    plan: str
    role: Literal["user", "admin"]
    disabled: bool
    disabled_at: datetime | None
    created_at: datetime


class AdminUserRowPublic(AdminUserPublic):
    pack: int = Field(description="Credits from packs and grants.")
    daily: int = Field(description="Left of the allowance of `period` (renewed on the user's next use).")
    period: str = Field(description="The UTC day `daily` belongs to.")


class AdminUsersPublic(BaseModel):
    data: list[AdminUserRowPublic]
    count: int


class AdminUserDetail(BaseModel):
    user: AdminUserPublic
    credits: CreditsPublic
    subscription: SubscriptionPublic | None


class CreditAdjustmentCreate(BaseModel):
    action: Literal["grant", "remove"]
    bucket: Literal["pack", "daily"] = Field(
        "pack", description="`pack`: never expires; `daily`: today's allowance (expires at 00:00 UTC)."
    )
    amount: int = Field(ge=1, le=1_000_000)
    reason: str = Field(
        min_length=1, max_length=200, pattern=NOT_BLANK_PATTERN, description="Why (kept in the ledger and audit log)."
    )


class CreditAdjustmentPublic(BaseModel):
    balance: int
    buckets: BucketsPublic


class PlanUpdate(BaseModel):
    plan: Literal["free", "pro"]
    reason: str = Field("", max_length=200, pattern=NO_NUL_PATTERN, description="Why (kept in the audit log).")


class PlanChangePublic(BaseModel):
    previous_plan: str
    plan: str
    top_up: int = Field(description="Credits added to today's allowance by an upgrade.")


class UserStatusUpdate(BaseModel):
    disabled: bool = Field(strict=True, description="true: none of the user's keys or sessions works from now on.")
    reason: str = Field("", max_length=200, pattern=NO_NUL_PATTERN, description="Why (kept in the audit log).")


class RoleUpdate(BaseModel):
    role: Literal["user", "admin"]


class AuditEntryPublic(BaseModel):
    id: int
    actor_id: str
    actor_email: str
    action: str
    target_user_id: str | None
    target_email: str | None
    details: dict[str, Any]
    created_at: datetime


class AuditLogPublic(BaseModel):
    data: list[AuditEntryPublic]
    count: int


# --- discussions between models ------------------------------------------------------------------
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
MAX_GOAL_CHARS = 4_000
_COLLABORATION = (
    'Let a stuck participant ask a helper model: `{"enabled": true}` (the configured pairs), with `pairs` to choose '
    "helpers (these first, then the configured ones). Omitted or null: off."
)


class DiscussionParticipantCreate(BaseModel):
    model: str = Field(
        min_length=1, max_length=200, description="A configured model's name (GET /api/models), e.g. `offline`."
    )
    role: str = Field(
        min_length=1,
        max_length=200,
        pattern=NOT_BLANK_PATTERN,
        description="What this participant does in the discussion, e.g. `critic` or `Python expert`.",
    )
    name: str | None = Field(
        None, max_length=60, pattern=NO_NUL_PATTERN, description="How the others call it (default: Participant N)."
    )


class DiscussionPairCreate(BaseModel):
    primary: str = Field(min_length=1, max_length=200, description="A participant's model.")
    secondary: str = Field(min_length=1, max_length=200, description="The model that helps it when it is stuck.")
    threshold: float | None = Field(
        None, ge=0, le=1, strict=True, description="Below this quality score an answer is stuck."
    )
    max_retries: WholeNumber | None = Field(
        None, ge=0, le=5, strict=True, description="How often one turn may ask the helper."
    )


class DiscussionCollaborationCreate(BaseModel):
    enabled: bool = Field(True, strict=True)
    pairs: list[DiscussionPairCreate] = Field(default_factory=list, max_length=20)


class DiscussionCreate(BaseModel):
    """A discussion to hold. The bounds of `turns`, `participants` and the model names are this
    server's (DISCUSSION_MAX_TURNS, DISCUSSION_MAX_PARTICIPANTS, GET /api/models): the model each
    app validates with comes from `discussion_create_model`."""

    goal: str = Field(
        min_length=1, max_length=MAX_GOAL_CHARS, pattern=NOT_BLANK_PATTERN, description="What the discussion is for."
    )
    turns: WholeNumber = Field(
        ge=1, strict=True, description="How many turns in all; the participants speak in order, round and round."
    )
    participants: list[DiscussionParticipantCreate] = Field(min_length=2)
    tools: list[Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]] | None = Field(
        None,
        max_length=200,
        description="The names of the tools the participants may call (GET /api/tools); [] for none; omitted or null "
        "for all.",
    )
    collaboration: DiscussionCollaborationCreate | None = Field(None, description=_COLLABORATION)


def discussion_create_model(*, models: list[str], max_turns: int, max_participants: int) -> type[DiscussionCreate]:
    """`DiscussionCreate` with this server's models and limits in its schema."""
    name: Any = Literal[tuple(models)] if models else str
    participant: Any = create_model(
        "DiscussionParticipantCreate",
        __base__=DiscussionParticipantCreate,
        __module__=__name__,
        model=(name, Field(description="A configured model's name (GET /api/models).")),
    )
    pair: Any = create_model(
        "DiscussionPairCreate",
        __base__=DiscussionPairCreate,
        __module__=__name__,
        primary=(name, Field(description="A participant's model.")),
        secondary=(name, Field(description="The model that helps it when it is stuck.")),
    )
    collaboration: Any = create_model(
        "DiscussionCollaborationCreate",
        __base__=DiscussionCollaborationCreate,
        __module__=__name__,
        pairs=(list[pair], Field(default_factory=list, max_length=20)),
    )
    either: Any = collaboration | None
    model: type[DiscussionCreate] = create_model(
        "DiscussionCreate",
        __base__=DiscussionCreate,
        __module__=__name__,
        turns=(
            WholeNumber,
            Field(ge=1, le=max_turns, strict=True, description=f"How many turns in all (at most {max_turns})."),
        ),
        participants=(
            list[participant],
            Field(min_length=2, max_length=max_participants, description=f"2 to {max_participants} participants."),
        ),
        collaboration=(either, Field(None, description=_COLLABORATION)),
    )
    return model


class DiscussionParticipantPublic(BaseModel):
    index: int
    model: str
    role: str
    name: str


class DiscussionItemPublic(ItemPublic):
    turn: int = Field(description="The turn the item belongs to.")
    speaker: int | None = Field(None, description="A message's speaker (the participant's index).")
    model: str | None = Field(None, description="The model that spoke a message.")


class DiscussionPublic(BaseModel):
    id: str
    title: str
    goal: str
    status: str = Field(description="running, done, stopped (cancelled, or out of credits), failed or interrupted.")
    stop_reason: str = Field(
        description="completed, credits_exhausted, cancelled, model_error, internal_error or interrupted (empty while "
        "running)."
    )
    turns: int
    turns_done: int
    credits_used: int
    participants: list[DiscussionParticipantPublic]
    tools: list[str]
    collaboration: bool
    created_at: datetime
    updated_at: datetime


class DiscussionsPublic(BaseModel):
    data: list[DiscussionPublic]
    count: int


class DiscussionDetail(DiscussionPublic):
    items: list[DiscussionItemPublic] = Field(description="Messages (`q3-r`: turn 3) and tool results, in order.")
    error: ErrorInfo | None = Field(None, description="Why a discussion just held (POST) stopped early, if it did.")


class ModelPublic(BaseModel):
    name: str = Field(description="What to name it as (discussion participants, collaboration pairs).")
    provider: str
    model: str = Field(description="The provider's name for it.")
    roles: list[str] = Field(description="What it is configured as: chat, offline, summariser, planner, tiers, helper.")
    aliases: list[str]


class DiscussionTermsPublic(BaseModel):
    turn_credits: int = Field(description="What one turn costs (its tool calls are priced like a chat's).")
    max_turns: int
    max_participants: int


class ModelsPublic(BaseModel):
    data: list[ModelPublic]
    count: int
    discussions: DiscussionTermsPublic
