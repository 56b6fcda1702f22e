"""Browser sessions remember the API key they were made from, so revoking the key ends them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("web_sessions") as batch:
        batch.add_column(sa.Column("api_key_id", sa.String(36), nullable=True))
        batch.create_foreign_key("fk_web_sessions_api_key_id", "api_keys", ["api_key_id"], ["id"], ondelete="CASCADE")
        batch.create_index("ix_web_sessions_api_key_id", ["api_key_id"])
        batch.create_index("ix_web_sessions_expires_at", ["expires_at"])


def downgrade() -> None:
    with op.batch_alter_table("web_sessions") as batch:
        batch.drop_index("ix_web_sessions_expires_at")
        batch.drop_index("ix_web_sessions_api_key_id")
        batch.drop_constraint("fk_web_sessions_api_key_id", type_="foreignkey")
        batch.drop_column("api_key_id")
