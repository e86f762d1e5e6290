"""A run's tags (key = value, given with `run --tag`) and note (`run --note`), to tell runs apart and
select them later.

Revision ID: 0006
Revises: 0005
"""

from alembic import op
from sqlalchemy import JSON, Column, Text

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", Column("tags", JSON))
    op.add_column("runs", Column("note", Text))


def downgrade() -> None:
    op.drop_column("runs", "note")
    op.drop_column("runs", "tags")
