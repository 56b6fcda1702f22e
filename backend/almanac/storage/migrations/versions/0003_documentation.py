"""Documentation retrieval: doc-source response cache, embedding cache, and the local doc index.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "doc_cache",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("source", sa.String(20), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "embedding_cache",
        sa.Column("model_id", sa.String(100), primary_key=True),
        sa.Column("content_hash", sa.String(64), primary_key=True),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "doc_libraries",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("version", sa.String(50), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
    )
    op.create_table(
        "doc_chunks",
        sa.Column("seq", BigId, primary_key=True, autoincrement=True),
        sa.Column("library_id", sa.String(200), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("source_url", sa.Text(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
    )
    op.create_index("ix_doc_chunks_library", "doc_chunks", ["library_id"])
    op.create_table(
        "doc_index",
        sa.Column("name", sa.String(50), primary_key=True),
        sa.Column("built_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("model_id", sa.String(100), nullable=True),
        sa.Column("bm25", sa.LargeBinary(), nullable=False),
        sa.Column("vectors", sa.LargeBinary(), nullable=True),
    )


def downgrade() -> None:
    for table in ("doc_index", "doc_chunks", "doc_libraries", "embedding_cache", "doc_cache"):
        op.drop_table(table)
