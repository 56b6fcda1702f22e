"""Estimated usage: which token figures were counted here because the server reported none.

`model_usage.estimated_calls` counts a chat query's model calls whose tokens were estimated;
`gateway_usage.usage_estimated` / `planner_usage_estimated` say the same of a gateway request's
upstream and planner tokens. Rows written before this revision were all taken as reported.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("model_usage") as batch:
        batch.add_column(sa.Column("estimated_calls", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("gateway_usage") as batch:
        batch.add_column(sa.Column("usage_estimated", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("planner_usage_estimated", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("gateway_usage") as batch:
        batch.drop_column("planner_usage_estimated")
        batch.drop_column("usage_estimated")
    with op.batch_alter_table("model_usage") as batch:
        batch.drop_column("estimated_calls")
