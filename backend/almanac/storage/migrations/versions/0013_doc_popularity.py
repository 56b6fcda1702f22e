"""The local documentation index keeps how many indexed modules use each API (`rag/popularity.py`).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("doc_index") as batch:
        batch.add_column(sa.Column("popularity", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("doc_index") as batch:
        batch.drop_column("popularity")
