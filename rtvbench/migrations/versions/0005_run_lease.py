"""The runner holding a run and its heartbeat, so that a second runner does not resume a live run.

Revision ID: 0005
Revises: 0004
"""

from alembic import op
from sqlalchemy import Column, DateTime, String

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", Column("runner", String(200)))
    op.add_column("runs", Column("heartbeat_at", DateTime(timezone=True)))


def downgrade() -> None:
    op.drop_column("runs", "heartbeat_at")
    op.drop_column("runs", "runner")
