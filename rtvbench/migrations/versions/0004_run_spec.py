"""The resolved campaign of a run (rtvbench.spec.CampaignSpec.to_json), defaults filled in.

Existing runs keep NULL: the reader builds their spec from campaign_text with the models of the
rtvbench reading them (rtvbench.campaign.reader.stored_spec), so this migration imports no model.

Revision ID: 0004
Revises: 0003
"""

from alembic import op
from sqlalchemy import JSON, Column

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain JSON on PostgreSQL too (not JSONB): the declared order of parameters is kept.
    op.add_column("runs", Column("spec", JSON))


def downgrade() -> None:
    op.drop_column("runs", "spec")
