"""The target's own log of a failed measurement (a guest's serial console, ssh's diagnostics).

Revision ID: 0003
Revises: 0002
"""

from alembic import op
from sqlalchemy import Column, Text

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("measurements", Column("target_log", Text))


def downgrade() -> None:
    op.drop_column("measurements", "target_log")
