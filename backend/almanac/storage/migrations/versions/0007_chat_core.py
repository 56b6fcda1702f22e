"""Chat core: ledger rows may carry an idempotency key (a refund under a key happens once, so a
dying run and the sweep that settles its query can never both refund it).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("ledger_entries") as batch:
        batch.add_column(sa.Column("idem_key", sa.String(120), nullable=True))
        batch.create_unique_constraint("uq_ledger_entries_idem_key", ["idem_key"])


def downgrade() -> None:
    with op.batch_alter_table("ledger_entries") as batch:
        batch.drop_constraint("uq_ledger_entries_idem_key", type_="unique")
        batch.drop_column("idem_key")
