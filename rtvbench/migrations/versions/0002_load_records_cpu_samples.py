"""Probe load records and /proc/stat CPU accounting per measurement.

Revision ID: 0002
Revises: 0001
"""

from alembic import op
from sqlalchemy import JSON, BigInteger, Column, DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Frozen copies of the types in rtvbench/store/schema.py as of this revision.
Json = JSON().with_variant(JSONB(), "postgresql")
BigId = BigInteger().with_variant(Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "load_records",
        Column("id", BigId, primary_key=True),
        Column("measurement_id", Integer, ForeignKey("measurements.id", ondelete="CASCADE"),
               nullable=False),
        Column("load", String(200), nullable=False),
        Column("seq", Integer, nullable=False),
        Column("type", String(20), nullable=False),
        Column("data", Json, nullable=False),
        Column("received_at", DateTime(timezone=True), nullable=False),
        UniqueConstraint("measurement_id", "load", "seq", name="uq_load_records_seq"),
    )
    op.create_table(
        "cpu_samples",
        Column("id", Integer, primary_key=True),
        Column("measurement_id", Integer, ForeignKey("measurements.id", ondelete="CASCADE"),
               nullable=False),
        Column("environment", String(200), nullable=False),
        Column("phase", String(10), nullable=False),
        Column("data", Json, nullable=False),
        Column("taken_at", DateTime(timezone=True), nullable=False),
        UniqueConstraint("measurement_id", "environment", "phase", name="uq_cpu_samples_phase"),
    )


def downgrade() -> None:
    op.drop_table("cpu_samples")
    op.drop_table("load_records")
