"""Reading runs back out of the store, as rtvbench.results dataclasses, in plain SQL that every store
reads (store.reading): `source` is a reading or a SQLAlchemy engine. load_run returns a
results.CampaignRun, whose spec is a spec.CampaignSpec."""

from __future__ import annotations

from typing import Any, Callable

from rtvbench.errors import InputError, StoreError
from rtvbench.store.reading import json_value, reading_of, utc_time


def _guard(fn):
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ValueError as e:
            # JSON columns are decoded as rows are read: text that is not JSON was written by
            # something else than rtvbench.
            raise StoreError(f"the store holds a row that is not valid JSON ({e}); it was changed outside "
                             "rtvbench: restore the database from a copy, or remove that run.") from None
    return wrapper


@_guard
def list_runs(source) -> list[dict[str, Any]]:
    """Every run, newest first, with its measurement counts (latest attempts only); a run whose runner
    is gone without saying so as "abandoned" (store.listing)."""
    # Here, not at the top: judging a runner gone takes the lease and its socket module, which `show`
    # and `report`, reading one run, do without (about 2 ms).
    from rtvbench.store.listing import LIST_SQL, listed_runs

    return listed_runs(reading_of(source).rows(LIST_SQL))


def measurement_stamps(source) -> dict[int, str]:
    """Run id -> a stamp of its measurements that changes whenever they do (store.listing.STAMP_SQL)."""
    from rtvbench.store.listing import STAMP_SQL, run_stamps
    return run_stamps(reading_of(source).rows(STAMP_SQL))


def _one(rows: list[dict[str, Any]]) -> Any:
    return next(iter(rows[0].values())) if rows else None


@_guard
def resolve_run(source, ref: str | None) -> int:
    """A run id from what the user typed: None = the latest run, digits = a run id,
    anything else = the latest run of the campaign with that name."""
    reading = reading_of(source)
    if ref is None:
        run_id = _one(reading.rows("SELECT max(id) FROM runs"))
        if run_id is None:
            raise InputError("the store holds no runs yet; start one with `rtvbench run`.")
    elif ref.isdigit():
        run_id = _one(reading.rows("SELECT id FROM runs WHERE id = :id", {"id": int(ref)}))
        if run_id is None:
            raise InputError(f"there is no run {ref} in the store; `rtvbench list` shows the runs.")
    else:
        run_id = _one(reading.rows("SELECT max(id) FROM runs WHERE campaign_name = :name", {"name": ref}))
        if run_id is None:
            raise InputError(f'the store holds no run of campaign "{ref}"; '
                             "`rtvbench list` shows the runs.")
    return run_id


def _spec(stored: Any, text: str, spec_of_text: Callable[[str], Any] | None):
    """The run's spec: as stored, else (a run stored before specs were, or by a version of rtvbench
    that wrote another shape) what the caller builds from its campaign text with today's models:
    the store does not know the campaign models (and through them every kind)."""
    from rtvbench.spec import CampaignSpec, SpecVersionError

    if stored is not None:
        try:
            return CampaignSpec.from_json(stored)
        except SpecVersionError:
            pass
    return spec_of_text(text) if spec_of_text is not None else None


def _json(column: str) -> str:
    """A JSON column as its text, which store.reading.json_value decodes: PostgreSQL's driver would
    hand back a decoded value, SQLite the text."""
    return f"CAST({column} AS TEXT) AS {column}"


def _in(ids: list[int]) -> tuple[str, dict[str, int]]:
    """An IN list of these measurement ids as :name parameters, which both connections take."""
    params = {f"m{i}": mid for i, mid in enumerate(ids)}
    return "(" + ", ".join(f":{name}" for name in params) + ")", params


@_guard
def load_run(source, run_id: int,
             spec_of_text: Callable[[str], Any] | None = None, bucket_tables: bool = True):
    """Everything about one run. A measurement re-run by --resume appears once, as
    its latest attempt; runs interrupted mid-measurement load like any other. A run stored without
    a readable spec gets spec_of_text(its campaign text), or none. With bucket_tables, every histogram's
    buckets become a numpy table as they are read (bucket_table), which an analysis of the whole run
    wants; a caller that reads figures only (`show`) leaves them lists and starts without numpy."""
    # Here, not at the top: `list` needs none of the run's dataclasses.
    from rtvbench.results import CampaignRun, Measurement

    reading = reading_of(source)
    found = reading.rows("SELECT id, campaign_name, campaign_text, status, started_at, finished_at, note, "
                         f"{_json('campaign')}, {_json('spec')}, {_json('tags')} FROM runs WHERE id = :id", {"id": run_id})
    if not found:
        raise InputError(f"there is no run {run_id} in the store; `rtvbench list` shows the runs.")
    run = found[0]
    prints, described, probe_meta = {}, {}, {}
    for r in reading.rows(f"SELECT environment, {_json('sysinfo')}, {_json('target')}, {_json('meta')} "
                          "FROM fingerprints WHERE run_id = :id",
                          {"id": run_id}):
        env = r["environment"]
        prints[env], described[env] = json_value(r["sysinfo"]), json_value(r["target"]) or {}
        probe_meta[env] = json_value(r["meta"]) or {}
    checks = reading.rows(f"SELECT environment, taken_at, {_json('data')} FROM health_checks WHERE run_id = :id "
                          "ORDER BY id", {"id": run_id})
    health = []
    if checks:              # a soak's: the records' types are imported for them, not for every run
        from rtvbench.records import HealthCheck
        health = [HealthCheck.of(r["environment"], utc_time(r["taken_at"]), json_value(r["data"])) for r in checks]
    latest: dict[tuple, Any] = {}
    earlier: list[Any] = []
    for row in reading.rows('SELECT id, environment, "load", benchmark, kind, repetition, status, started_at, '
                            "finished_at, error, target_log, attempt, order_index, "
                            f"{_json('command')}, {_json('load_commands')} FROM measurements WHERE run_id = :id "
                            "ORDER BY attempt", {"id": run_id}):
        for key in ("command", "load_commands"):
            row[key] = json_value(row[key])
        for key in ("started_at", "finished_at"):
            row[key] = utc_time(row[key])
        key = (row["environment"], row["load"], row["benchmark"], row["repetition"])
        if key in latest:
            earlier.append(latest[key])
        latest[key] = row
    rows = sorted(latest.values(), key=lambda r: r["order_index"])
    lines: dict[int, list[dict]] = {r["id"]: [] for r in rows}
    loads: dict[int, dict[str, list[dict]]] = {mid: {} for mid in lines}
    stats: dict[int, dict[str, dict]] = {mid: {} for mid in lines}
    if rows:
        among, params = _in(list(lines))
        for r in reading.rows(f"SELECT measurement_id, {_json('data')} FROM records WHERE measurement_id IN {among} "
                              "ORDER BY measurement_id, seq", params):
            data = json_value(r["data"])
            if bucket_tables and isinstance(data, dict):
                from rtvbench.bucket_table import compact_histograms
                data = compact_histograms(data)
            lines[r["measurement_id"]].append(data)
        for r in reading.rows(f'SELECT measurement_id, "load", {_json("data")} FROM load_records WHERE measurement_id IN '
                              f'{among} ORDER BY measurement_id, "load", seq', params):
            loads[r["measurement_id"]].setdefault(r["load"], []).append(json_value(r["data"]))
        # Only the measured environment's counters: the runner samples nothing else today,
        # and a load's neighbour environment would be a different machine's CPUs.
        env_of = {r["id"]: r["environment"] for r in rows}
        for r in reading.rows(f"SELECT measurement_id, environment, phase, {_json('data')} FROM cpu_samples "
                              f"WHERE measurement_id IN {among}", params):
            if r["environment"] == env_of[r["measurement_id"]]:
                stats[r["measurement_id"]][r["phase"]] = json_value(r["data"])
    result = []
    for r in rows:
        recs = lines[r["id"]]
        by_type = lambda t: [x for x in recs if x.get("type") == t]   # noqa: E731
        metas = by_type("meta")
        result.append(Measurement(
            id=r["id"], environment=r["environment"], load=r["load"], benchmark=r["benchmark"],
            kind=r["kind"], repetition=r["repetition"], status=r["status"],
            command=list(r["command"]), load_commands=list(r["load_commands"]),
            started_at=r["started_at"], finished_at=r["finished_at"],
            meta=metas[0] if metas else None, results=by_type("result"),
            windows=by_type("window"), warnings=by_type("warning"), error=r["error"],
            target_log=r["target_log"], attempt=r["attempt"],
            load_records=loads[r["id"]], cpu_stat=stats[r["id"]],
            end=(by_type("end") or [None])[-1], traces=by_type("trace")))
    failed = [Measurement(
        id=r["id"], environment=r["environment"], load=r["load"], benchmark=r["benchmark"],
        kind=r["kind"], repetition=r["repetition"], status=r["status"], command=list(r["command"]),
        load_commands=list(r["load_commands"]), started_at=r["started_at"],
        finished_at=r["finished_at"], meta=None, results=[], error=r["error"],
        target_log=r["target_log"], attempt=r["attempt"])
        for r in sorted(earlier, key=lambda r: (r["order_index"], r["attempt"])) if r["status"] == "error"]
    return CampaignRun(
        id=run["id"], campaign_name=run["campaign_name"], campaign_text=run["campaign_text"],
        campaign=json_value(run["campaign"]), status=run["status"], started_at=utc_time(run["started_at"]),
        finished_at=utc_time(run["finished_at"]), fingerprints=prints, measurements=result,
        failed_attempts=failed, targets=described, fingerprint_meta=probe_meta,
        spec=_spec(json_value(run["spec"]), run["campaign_text"], spec_of_text), tags=json_value(run["tags"]) or {}, note=run["note"], health=health)
