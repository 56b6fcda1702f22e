"""Gateway usage (the Anthropic-compatible gateway records every request per user).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "gateway_usage",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("api_key_id", sa.String(36), nullable=True),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("upstream", sa.String(20), nullable=False),
        sa.Column("upstream_model", sa.String(200), nullable=False),
        sa.Column("stream", sa.Boolean(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("first_token_ms", sa.Integer(), nullable=True),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("error_type", sa.String(40), nullable=True),
        sa.Column("planner_model", sa.String(200), nullable=True),
        sa.Column("planner_input_tokens", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("planner_output_tokens", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("boost_loops", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("boost_outcome", sa.String(20), nullable=True),
        sa.Column("credits", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_gateway_usage_user_created", "gateway_usage", ["user_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_gateway_usage_user_created", table_name="gateway_usage")
    op.drop_table("gateway_usage")
