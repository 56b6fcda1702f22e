"""Discussions between models (stored like chats): `discussions` and their `discussion_items`.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "discussions",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("goal", sa.Text(), nullable=False),
        sa.Column("turns", sa.Integer(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("stop_reason", sa.String(32), nullable=False),
        sa.Column("turns_done", sa.Integer(), nullable=False),
        sa.Column("credits_used", sa.Integer(), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_discussions_user_updated", "discussions", ["user_id", "updated_at"])
    op.create_index("ix_discussions_lease_until", "discussions", ["lease_until"])
    op.create_table(
        "discussion_items",
        sa.Column("seq", _BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("discussion_id", sa.String(36), sa.ForeignKey("discussions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("item_id", sa.String(32), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("ref", sa.String(32), nullable=True),
        sa.Column("speaker", sa.Integer(), nullable=True),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("tool_name", sa.String(128), nullable=True),
        sa.Column("tool_input", sa.JSON(), nullable=True),
        sa.Column("tool_use_id", sa.String(100), nullable=True),
        sa.Column("is_error", sa.Boolean(), nullable=False),
        sa.Column("credits", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("discussion_id", "item_id", name="uq_discussion_items_discussion_item"),
    )
    op.create_index("ix_discussion_items_discussion_seq", "discussion_items", ["discussion_id", "seq"])


def downgrade() -> None:
    op.drop_index("ix_discussion_items_discussion_seq", table_name="discussion_items")
    op.drop_table("discussion_items")
    op.drop_index("ix_discussions_lease_until", table_name="discussions")
    op.drop_index("ix_discussions_user_updated", table_name="discussions")
    op.drop_table("discussions")
