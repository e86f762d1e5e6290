"""PostgreSQL keeps JSON as written (json, not jsonb): key order and every string survive.

jsonb sorts an object's keys, so a run read back from PostgreSQL listed its fingerprints' fields and
its campaign's tables in another order than the same run from SQLite, and it refuses the escape
\\u0000 that a probe string may hold. The store never queries inside its JSON, so it loses nothing.
SQLite's columns are JSON already: nothing changes there.

Revision ID: 0007
Revises: 0006
"""

from alembic import op
from sqlalchemy import JSON
from sqlalchemy.dialects.postgresql import JSONB

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# Every column that 0001 and 0002 made jsonb on PostgreSQL.
COLUMNS = {
    "runs": ("campaign",),
    "fingerprints": ("target", "sysinfo", "meta"),
    "measurements": ("command", "load_commands"),
    "records": ("data",),
    "load_records": ("data",),
    "cpu_samples": ("data",),
}


def _retype(type_, cast: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, columns in COLUMNS.items():
        for column in columns:
            op.alter_column(table, column, type_=type_, postgresql_using=f"{column}::{cast}")


def upgrade() -> None:
    _retype(JSON(), "json")


def downgrade() -> None:
    _retype(JSONB(), "jsonb")
