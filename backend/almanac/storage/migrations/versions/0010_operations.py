"""SaaS operations: roles, disabled users, audit log, Stripe customers, subscriptions and processed events.

Also the tokens each chat query's models used (`model_usage`), for the usage views.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("role", sa.String(16), nullable=False, server_default="user"))
        batch.add_column(sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "stripe_customers",
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("customer_id", sa.String(100), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "stripe_subscriptions",
        sa.Column("subscription_id", sa.String(100), primary_key=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("status", sa.String(24), nullable=False),
        sa.Column("cancel_at_period_end", sa.Boolean(), nullable=False),
        sa.Column("current_period_end", sa.DateTime(timezone=True), nullable=True),
        sa.Column("event_created", sa.BigInteger(), nullable=False),
        sa.Column("payment_failed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_stripe_subscriptions_user_id", "stripe_subscriptions", ["user_id"])
    op.create_table(
        "billing_events",
        sa.Column("event_id", sa.String(100), primary_key=True),
        sa.Column("type", sa.String(100), nullable=False),
        sa.Column("created", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.String(36), nullable=True),
        sa.Column("outcome", sa.String(200), nullable=False),
        sa.Column("processed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_billing_events_user_id", "billing_events", ["user_id"])
    op.create_table(
        "audit_log",
        sa.Column("id", _BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("actor_id", sa.String(36), nullable=False),
        sa.Column("actor_email", sa.String(320), nullable=False),
        sa.Column("action", sa.String(40), nullable=False),
        sa.Column("target_user_id", sa.String(36), nullable=True),
        sa.Column("target_email", sa.String(320), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_audit_log_target", "audit_log", ["target_user_id", "id"])
    op.create_table(
        "model_usage",
        sa.Column("id", _BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("conversation_id", sa.String(36), nullable=False),
        sa.Column("query_id", sa.String(16), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("provider", sa.String(20), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("conversation_id", "query_id", "role", "model", name="uq_model_usage_query_role_model"),
    )
    op.create_index("ix_model_usage_user_created", "model_usage", ["user_id", "created_at"])
    op.create_index("ix_model_usage_created", "model_usage", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_model_usage_created", table_name="model_usage")
    op.drop_index("ix_model_usage_user_created", table_name="model_usage")
    op.drop_table("model_usage")
    op.drop_index("ix_audit_log_target", table_name="audit_log")
    op.drop_table("audit_log")
    op.drop_index("ix_billing_events_user_id", table_name="billing_events")
    op.drop_table("billing_events")
    op.drop_index("ix_stripe_subscriptions_user_id", table_name="stripe_subscriptions")
    op.drop_table("stripe_subscriptions")
    op.drop_table("stripe_customers")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("disabled_at")
        batch.drop_column("role")
