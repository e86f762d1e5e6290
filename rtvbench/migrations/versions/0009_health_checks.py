"""Health checks of a soak run's environments (`rtvbench soak`): a time series per run, and the
events a soak records between measurements (a target lost, recovered).

Revision ID: 0009
Revises: 0008
"""

from alembic import op
from sqlalchemy import JSON, Column, DateTime, ForeignKey, Integer, String

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "health_checks",
        Column("id", Integer, primary_key=True),
        Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        Column("environment", String(200), nullable=False),
        Column("data", JSON, nullable=False),
        Column("taken_at", DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_health_checks_run", "health_checks", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_health_checks_run", "health_checks")
    op.drop_table("health_checks")
