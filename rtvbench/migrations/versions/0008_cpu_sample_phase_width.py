"""cpu_samples.phase holds the runner's longer phases too ("processes_before", "loadavg_after"):
SQLite never enforced the old 10 characters, PostgreSQL refused them.

Revision ID: 0008
Revises: 0007
"""

from alembic import op
from sqlalchemy import String

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("cpu_samples") as batch:
        batch.alter_column("phase", type_=String(40), existing_type=String(10), existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("cpu_samples") as batch:
        batch.alter_column("phase", type_=String(10), existing_type=String(40), existing_nullable=False)
