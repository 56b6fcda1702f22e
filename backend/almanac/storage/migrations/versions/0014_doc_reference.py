"""The local documentation index keeps the Python documentation's description of each standard-library API
(`rag/python_reference.py`), searched as a field of the passages documenting it.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("doc_index") as batch:
        batch.add_column(sa.Column("reference", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("doc_index") as batch:
        batch.drop_column("reference")
