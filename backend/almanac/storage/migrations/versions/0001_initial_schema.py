"""Initial schema: users, API keys, credit accounts, ledger, conversations, history items.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _timestamp(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("email", sa.String(320), nullable=False, unique=True),
        sa.Column("plan", sa.String(16), nullable=False),
        _timestamp("created_at"),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        _timestamp("created_at"),
        _timestamp("last_used_at", nullable=True),
        _timestamp("revoked_at", nullable=True),
    )
    op.create_index("ix_api_keys_user_id", "api_keys", ["user_id"])
    op.create_table(
        "credit_accounts",
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("daily_balance", sa.Integer(), nullable=False),
        sa.Column("pack_balance", sa.Integer(), nullable=False),
        sa.Column("daily_period", sa.String(10), nullable=False),
        sa.Column("month_period", sa.String(7), nullable=False),
        sa.Column("month_used", sa.Integer(), nullable=False),
        sa.Column("last_debit_daily", sa.Integer(), nullable=False),
        sa.CheckConstraint("daily_balance >= 0", name="ck_daily_balance_nonnegative"),
        sa.CheckConstraint("pack_balance >= 0", name="ck_pack_balance_nonnegative"),
    )
    op.create_table(
        "ledger_entries",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(36), nullable=False),
        sa.Column("delta", sa.Integer(), nullable=False),
        sa.Column("bucket", sa.String(8), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(200), nullable=False),
        sa.Column("period", sa.String(10), nullable=False),
        sa.Column("conversation_id", sa.String(36), nullable=True),
        sa.Column("query_id", sa.String(16), nullable=True),
        sa.Column("item_id", sa.String(32), nullable=True),
        _timestamp("created_at"),
    )
    op.create_index("ix_ledger_user_id_id", "ledger_entries", ["user_id", "id"])
    op.create_table(
        "conversations",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("query_counter", sa.Integer(), nullable=False),
        sa.Column("lock_token", sa.String(36), nullable=True),
        _timestamp("locked_until", nullable=True),
        _timestamp("created_at"),
        _timestamp("updated_at"),
    )
    op.create_index("ix_conversations_user_updated", "conversations", ["user_id", "updated_at"])
    op.create_table(
        "history_items",
        sa.Column("seq", BigId, primary_key=True, autoincrement=True),
        sa.Column(
            "conversation_id", sa.String(36), sa.ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("item_id", sa.String(32), nullable=False),
        sa.Column("query_number", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("ref", sa.String(32), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("tool_name", sa.String(128), nullable=True),
        sa.Column("tool_input", sa.JSON(), nullable=True),
        sa.Column("tool_use_id", sa.String(100), nullable=True),
        sa.Column("is_error", sa.Boolean(), nullable=False),
        sa.Column("credits", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        _timestamp("created_at"),
        _timestamp("updated_at"),
        sa.UniqueConstraint("conversation_id", "item_id", name="uq_history_items_conversation_item"),
    )
    op.create_index("ix_history_items_conversation_seq", "history_items", ["conversation_id", "seq"])


def downgrade() -> None:
    for table in ("history_items", "conversations", "ledger_entries", "credit_accounts", "api_keys", "users"):
        op.drop_table(table)
