"""A conversation may keep its own answer strategy (direct, boost, collaborate), and an answer
remembers which model wrote it.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("conversations") as batch:
        batch.add_column(sa.Column("strategy", sa.String(16), nullable=True))
    with op.batch_alter_table("history_items") as batch:
        batch.add_column(sa.Column("model", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("history_items") as batch:
        batch.drop_column("model")
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("strategy")
