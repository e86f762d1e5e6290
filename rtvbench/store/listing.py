"""The list of runs (`rtvbench list`, `history`): one query for every database."""

from __future__ import annotations

from typing import Any

from rtvbench.store.lease import holder_alive
from rtvbench.store.reading import json_value, utc_time

# Every run, newest first, with its measurement counts over the latest attempt of each measurement
# (see schema.measurements).
LIST_SQL = """
SELECT runs.id, runs.campaign_name, runs.status, runs.seed, runs.started_at, runs.finished_at, runs.runner,
       runs.heartbeat_at, CAST(runs.tags AS TEXT) AS tags, runs.note, counts.measurements, counts.ok
FROM runs LEFT OUTER JOIN (
    SELECT newest.run_id, count(*) AS measurements,
           sum(CASE WHEN newest.status = 'ok' THEN 1 ELSE 0 END) AS ok
    FROM (SELECT m.run_id, m.status FROM measurements AS m
          WHERE m.attempt = (SELECT max(m2.attempt) FROM measurements AS m2
                             WHERE m2.run_id = m.run_id AND m2.environment = m.environment
                               AND m2."load" = m."load" AND m2.benchmark = m.benchmark
                               AND m2.repetition = m.repetition)) AS newest
    GROUP BY newest.run_id) AS counts ON counts.run_id = runs.id
ORDER BY runs.id DESC
"""


def listed_runs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """LIST_SQL's rows as the runs `list` shows. A run whose runner is gone (killed, its machine lost)
    without saying so has the status "abandoned": `run --resume` continues it. A tags cell that is
    not JSON raises ValueError."""
    for r in rows:
        for key in ("started_at", "finished_at", "heartbeat_at"):
            r[key] = utc_time(r[key])
        r["tags"] = json_value(r["tags"]) or {}
        r["measurements"], r["ok"] = r["measurements"] or 0, r["ok"] or 0
        if r["status"] == "running" and (not r["runner"] or holder_alive(r["runner"], r["heartbeat_at"]) is None):
            r["status"] = "abandoned"
    return rows

# Per run, what changes whenever its measurements do: a measurement started (a row, a higher id), one
# finished or failed (its end, its status), a measurement re-run by --resume (another attempt's row).
# The published site keeps each run's history values under this stamp (publish.values).
STAMP_SQL = """
SELECT run_id, count(*) AS measurement_rows, max(id) AS last_id, max(finished_at) AS last_end,
       sum(CASE WHEN status = 'ok' THEN 1 ELSE 0 END) AS ok_rows
FROM measurements GROUP BY run_id
"""


def run_stamps(rows: list[dict[str, Any]]) -> dict[int, str]:
    """STAMP_SQL's rows as run id -> its stamp (a run without measurements has none)."""
    return {r["run_id"]: f"{r['measurement_rows']}/{r['last_id']}/{utc_time(r['last_end'])}/{r['ok_rows'] or 0}"
            for r in rows}
