"""The result store's tables (SQLAlchemy Core).

Portable on purpose: generic JSON (plain json on PostgreSQL, not jsonb: a run reads back
with its keys in the order they were written and with any string a probe printed, as from
SQLite; migration 0007 says more), timezone-aware times, BigInteger for anything in
nanoseconds, no SQLite-only SQL. The Alembic migrations in rtvbench/migrations create
exactly these tables, on SQLite and on PostgreSQL; tests compare the two on both.
"""

from __future__ import annotations

from sqlalchemy import (JSON, BigInteger, Column, DateTime, ForeignKey, Index, Integer,
                        MetaData, String, Table, Text, UniqueConstraint)

metadata = MetaData()

# SQLite only auto-increments an INTEGER PRIMARY KEY; elsewhere record ids may exceed 2**31.
BigId = BigInteger().with_variant(Integer(), "sqlite")

# One execution of a campaign file. `status`: running | finished | interrupted.
runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True),
    Column("campaign_name", String(200), nullable=False, index=True),
    Column("campaign_text", Text, nullable=False),
    Column("campaign", JSON, nullable=False),             # the parsed TOML
    # rtvbench.spec.CampaignSpec.to_json(): the campaign as validated, defaults filled. NULL in runs
    # stored before it existed: the reader builds theirs from campaign_text.
    Column("spec", JSON),
    Column("campaign_hash", String(64), nullable=False),  # sha256 of campaign_text
    Column("seed", BigInteger, nullable=False),
    Column("status", String(20), nullable=False),
    Column("rtvbench_version", String(40), nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    # The runner that holds the run ("host:pid:start", null when none does) and when it last said it
    # is alive: a second runner resumes the run only once that one is gone (store.writer).
    Column("runner", String(200)),
    Column("heartbeat_at", DateTime(timezone=True)),
    # `run --tag key=value` (an object of strings; null in runs stored before tags) and `run --note`.
    Column("tags", JSON),
    Column("note", Text),
)

# Each environment's `rtvb-probe sysinfo` record, once per run.
fingerprints = Table(
    "fingerprints", metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("environment", String(200), nullable=False),
    Column("target", JSON, nullable=False),               # Target.describe()
    Column("sysinfo", JSON, nullable=False),
    Column("meta", JSON),                                  # the probe's meta record
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("run_id", "environment", name="uq_fingerprints_run_env"),
)

# One execution of one benchmark under one load in one environment. A measurement
# that is re-run on --resume gets a new row with attempt + 1; readers use the latest.
# `status`: running | ok | interrupted | error.
measurements = Table(
    "measurements", metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("environment", String(200), nullable=False),
    Column("load", String(200), nullable=False),
    Column("benchmark", String(200), nullable=False),
    Column("kind", String(40), nullable=False),
    Column("repetition", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("order_index", Integer, nullable=False),       # position in the shuffled plan
    Column("status", String(20), nullable=False),
    Column("command", JSON, nullable=False),               # exact probe argv
    Column("load_commands", JSON, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Column("returncode", Integer),
    Column("error", Text),
    # What the target itself said when it went away mid-measurement: the end of a guest's serial
    # console (its kernel panic), ssh's diagnostics. Null when the target stayed up.
    Column("target_log", Text),
    UniqueConstraint("run_id", "environment", "load", "benchmark", "repetition", "attempt",
                     name="uq_measurements_key"),
)
Index("ix_measurements_run", measurements.c.run_id)

# Every line the probe printed (meta, warning, window, result, end), committed as
# it arrives: `seq` is its line number in the probe's output.
records = Table(
    "records", metadata,
    Column("id", BigId, primary_key=True),
    Column("measurement_id", Integer, ForeignKey("measurements.id", ondelete="CASCADE"),
           nullable=False),
    Column("seq", Integer, nullable=False),
    Column("type", String(20), nullable=False),
    Column("data", JSON, nullable=False),
    Column("received_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("measurement_id", "seq", name="uq_records_seq"),
)

# Every line a probe load generator (`rtvb-probe load`) printed while it loaded a measurement,
# committed as it arrives. `load` is the name of the load in the campaign (for a combined load,
# the name of each part), `seq` the line number in that load's output.
load_records = Table(
    "load_records", metadata,
    Column("id", BigId, primary_key=True),
    Column("measurement_id", Integer, ForeignKey("measurements.id", ondelete="CASCADE"),
           nullable=False),
    Column("load", String(200), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("type", String(20), nullable=False),
    Column("data", JSON, nullable=False),
    Column("received_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("measurement_id", "load", "seq", name="uq_load_records_seq"),
)

# The CPU time counters of /proc/stat in an environment right before (`phase` = "before") and
# right after ("after") the probe ran: {"cpu": {"user": ticks, ...}, "cpu0": {...}, ...}; beside them
# the processes seen then ("processes_before", "processes_after"), the load average ("loadavg_after"),
# and for a qemu environment what its guests' QEMU processes cost the host ("host_before", "host_after").
cpu_samples = Table(
    "cpu_samples", metadata,
    Column("id", Integer, primary_key=True),
    Column("measurement_id", Integer, ForeignKey("measurements.id", ondelete="CASCADE"),
           nullable=False),
    Column("environment", String(200), nullable=False),
    Column("phase", String(40), nullable=False),
    Column("data", JSON, nullable=False),
    Column("taken_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("measurement_id", "environment", "phase", name="uq_cpu_samples_phase"),
)

# `rtvbench soak`: every environment's health, checked between measurements (probe answering, guest
# and QEMU memory), and the events of the soak (a target lost, brought back), as a time series.
health_checks = Table(
    "health_checks", metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("environment", String(200), nullable=False),
    Column("data", JSON, nullable=False),
    Column("taken_at", DateTime(timezone=True), nullable=False),
    Index("ix_health_checks_run", "run_id"),
)
