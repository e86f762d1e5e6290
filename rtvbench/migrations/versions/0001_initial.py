"""Initial schema: runs, fingerprints, measurements, records.

Revision ID: 0001
Revises:
"""

from alembic import op
from sqlalchemy import (JSON, BigInteger, Column, DateTime, ForeignKey, Integer, String, Text,
                        UniqueConstraint)
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Frozen copies of the types in rtvbench/store/schema.py as of this revision.
Json = JSON().with_variant(JSONB(), "postgresql")
BigId = BigInteger().with_variant(Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "runs",
        Column("id", Integer, primary_key=True),
        Column("campaign_name", String(200), nullable=False),
        Column("campaign_text", Text, nullable=False),
        Column("campaign", Json, nullable=False),
        Column("campaign_hash", String(64), nullable=False),
        Column("seed", BigInteger, nullable=False),
        Column("status", String(20), nullable=False),
        Column("rtvbench_version", String(40), nullable=False),
        Column("started_at", DateTime(timezone=True), nullable=False),
        Column("finished_at", DateTime(timezone=True)),
    )
    op.create_index("ix_runs_campaign_name", "runs", ["campaign_name"])
    op.create_table(
        "fingerprints",
        Column("id", Integer, primary_key=True),
        Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        Column("environment", String(200), nullable=False),
        Column("target", Json, nullable=False),
        Column("sysinfo", Json, nullable=False),
        Column("meta", Json),
        Column("recorded_at", DateTime(timezone=True), nullable=False),
        UniqueConstraint("run_id", "environment", name="uq_fingerprints_run_env"),
    )
    op.create_table(
        "measurements",
        Column("id", Integer, primary_key=True),
        Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        Column("environment", String(200), nullable=False),
        Column("load", String(200), nullable=False),
        Column("benchmark", String(200), nullable=False),
        Column("kind", String(40), nullable=False),
        Column("repetition", Integer, nullable=False),
        Column("attempt", Integer, nullable=False),
        Column("order_index", Integer, nullable=False),
        Column("status", String(20), nullable=False),
        Column("command", Json, nullable=False),
        Column("load_commands", Json, nullable=False),
        Column("started_at", DateTime(timezone=True), nullable=False),
        Column("finished_at", DateTime(timezone=True)),
        Column("returncode", Integer),
        Column("error", Text),
        UniqueConstraint("run_id", "environment", "load", "benchmark", "repetition", "attempt",
                         name="uq_measurements_key"),
    )
    op.create_index("ix_measurements_run", "measurements", ["run_id"])
    op.create_table(
        "records",
        Column("id", BigId, primary_key=True),
        Column("measurement_id", Integer, ForeignKey("measurements.id", ondelete="CASCADE"),
               nullable=False),
        Column("seq", Integer, nullable=False),
        Column("type", String(20), nullable=False),
        Column("data", Json, nullable=False),
        Column("received_at", DateTime(timezone=True), nullable=False),
        UniqueConstraint("measurement_id", "seq", name="uq_records_seq"),
    )


def downgrade() -> None:
    op.drop_table("records")
    op.drop_index("ix_measurements_run", "measurements")
    op.drop_table("measurements")
    op.drop_table("fingerprints")
    op.drop_index("ix_runs_campaign_name", "runs")
    op.drop_table("runs")
