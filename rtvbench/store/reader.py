"""Reading runs back out of the store, as rtvbench.results dataclasses."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

from sqlalchemy import Engine, func, select
from sqlalchemy.exc import SQLAlchemyError

from rtvbench.errors import InputError, StoreError
from rtvbench.records import HealthCheck
from rtvbench.results import CampaignRun, Measurement
from rtvbench.spec import CampaignSpec, SpecVersionError
from rtvbench.store.listing import LIST_SQL, listed_runs
from rtvbench.store.schema import (cpu_samples, fingerprints, health_checks, load_records, measurements, records,
                                   runs)


def _aware(t: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; everything in the store is UTC.
    if t is not None and t.tzinfo is None:
        return t.replace(tzinfo=timezone.utc)
    return t


def _guard(fn):
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except SQLAlchemyError as e:
            raise StoreError(f"reading the store failed ({e.__class__.__name__}: "
                             f"{getattr(e, 'orig', e)}); check the --store database.") from None
        except ValueError as e:
            # JSON columns are decoded as rows are read: text that is not JSON was written by
            # something else than rtvbench.
            raise StoreError(f"the store holds a row that is not valid JSON ({e}); it was changed outside "
                             "rtvbench: restore the database from a copy, or remove that run.") from None
    return wrapper


@_guard
def list_runs(engine: Engine) -> list[dict[str, Any]]:
    """Every run, newest first, with its measurement counts (latest attempts only); a run whose runner
    is gone without saying so as "abandoned" (store.listing)."""
    with engine.connect() as conn:
        return listed_runs(conn.exec_driver_sql(LIST_SQL).fetchall())


@_guard
def resolve_run(engine: Engine, ref: str | None) -> int:
    """A run id from what the user typed: None = the latest run, digits = a run id,
    anything else = the latest run of the campaign with that name."""
    with engine.connect() as conn:
        if ref is None:
            run_id = conn.scalar(select(func.max(runs.c.id)))
            if run_id is None:
                raise InputError("the store holds no runs yet; start one with `rtvbench run`.")
        elif ref.isdigit():
            run_id = conn.scalar(select(runs.c.id).where(runs.c.id == int(ref)))
            if run_id is None:
                raise InputError(f"there is no run {ref} in the store; `rtvbench list` shows the runs.")
        else:
            run_id = conn.scalar(select(func.max(runs.c.id)).where(runs.c.campaign_name == ref))
            if run_id is None:
                raise InputError(f'the store holds no run of campaign "{ref}"; '
                                 "`rtvbench list` shows the runs.")
    return run_id


def _spec(stored: Any, text: str, spec_of_text: Callable[[str], CampaignSpec | None] | None) -> CampaignSpec | None:
    """The run's spec: as stored, else (a run stored before specs were, or by a version of rtvbench
    that wrote another shape) what the caller builds from its campaign text with today's models:
    the store does not know the campaign models (and through them every kind)."""
    if stored is not None:
        try:
            return CampaignSpec.from_json(stored)
        except SpecVersionError:
            pass
    return spec_of_text(text) if spec_of_text is not None else None


@_guard
def load_run(engine: Engine, run_id: int,
             spec_of_text: Callable[[str], CampaignSpec | None] | None = None) -> CampaignRun:
    """Everything about one run. A measurement re-run by --resume appears once, as
    its latest attempt; runs interrupted mid-measurement load like any other. A run stored without
    a readable spec gets spec_of_text(its campaign text), or none."""
    # Here, not at the top: numpy is not needed for `list` and the other quick commands.
    from rtvbench.bucket_table import compact_histograms

    with engine.connect() as conn:
        run = conn.execute(select(runs).where(runs.c.id == run_id)).mappings().first()
        if run is None:
            raise InputError(f"there is no run {run_id} in the store; `rtvbench list` shows the runs.")
        prints, described, probe_meta = {}, {}, {}
        for r in conn.execute(select(fingerprints.c.environment, fingerprints.c.sysinfo, fingerprints.c.target,
                                     fingerprints.c.meta).where(fingerprints.c.run_id == run_id)):
            prints[r.environment], described[r.environment] = r.sysinfo, r.target or {}
            probe_meta[r.environment] = r.meta or {}
        health = [HealthCheck.of(r.environment, _aware(r.taken_at), r.data) for r in conn.execute(
            select(health_checks.c.environment, health_checks.c.taken_at, health_checks.c.data)
            .where(health_checks.c.run_id == run_id).order_by(health_checks.c.id))]
        latest: dict[tuple, Any] = {}
        earlier: list[Any] = []
        for row in conn.execute(select(measurements).where(measurements.c.run_id == run_id)
                                .order_by(measurements.c.attempt)).mappings():
            key = (row["environment"], row["load"], row["benchmark"], row["repetition"])
            if key in latest:
                earlier.append(latest[key])
            latest[key] = row
        rows = sorted(latest.values(), key=lambda r: r["order_index"])
        lines: dict[int, list[dict]] = {r["id"]: [] for r in rows}
        if rows:
            for mid, data in conn.execute(select(records.c.measurement_id, records.c.data)
                                          .where(records.c.measurement_id.in_(list(lines)))
                                          .order_by(records.c.measurement_id, records.c.seq)):
                lines[mid].append(compact_histograms(data) if isinstance(data, dict) else data)
        loads: dict[int, dict[str, list[dict]]] = {mid: {} for mid in lines}
        stats: dict[int, dict[str, dict]] = {mid: {} for mid in lines}
        if rows:
            for mid, load, data in conn.execute(
                    select(load_records.c.measurement_id, load_records.c.load, load_records.c.data)
                    .where(load_records.c.measurement_id.in_(list(lines)))
                    .order_by(load_records.c.measurement_id, load_records.c.load, load_records.c.seq)):
                loads[mid].setdefault(load, []).append(data)
            # Only the measured environment's counters: the runner samples nothing else today,
            # and a load's neighbour environment would be a different machine's CPUs.
            env_of = {r["id"]: r["environment"] for r in rows}
            for mid, env, phase, data in conn.execute(
                    select(cpu_samples.c.measurement_id, cpu_samples.c.environment, cpu_samples.c.phase,
                           cpu_samples.c.data).where(cpu_samples.c.measurement_id.in_(list(lines)))):
                if env == env_of[mid]:
                    stats[mid][phase] = data
    result = []
    for r in rows:
        recs = lines[r["id"]]
        by_type = lambda t: [x for x in recs if x.get("type") == t]   # noqa: E731
        metas = by_type("meta")
        result.append(Measurement(
            id=r["id"], environment=r["environment"], load=r["load"], benchmark=r["benchmark"],
            kind=r["kind"], repetition=r["repetition"], status=r["status"],
            command=list(r["command"]), load_commands=list(r["load_commands"]),
            started_at=_aware(r["started_at"]), finished_at=_aware(r["finished_at"]),
            meta=metas[0] if metas else None, results=by_type("result"),
            windows=by_type("window"), warnings=by_type("warning"), error=r["error"],
            target_log=r["target_log"], attempt=r["attempt"],
            load_records=loads[r["id"]], cpu_stat=stats[r["id"]],
            end=(by_type("end") or [None])[-1], traces=by_type("trace")))
    failed = [Measurement(
        id=r["id"], environment=r["environment"], load=r["load"], benchmark=r["benchmark"],
        kind=r["kind"], repetition=r["repetition"], status=r["status"], command=list(r["command"]),
        load_commands=list(r["load_commands"]), started_at=_aware(r["started_at"]),
        finished_at=_aware(r["finished_at"]), meta=None, results=[], error=r["error"],
        target_log=r["target_log"], attempt=r["attempt"])
        for r in sorted(earlier, key=lambda r: (r["order_index"], r["attempt"])) if r["status"] == "error"]
    return CampaignRun(
        id=run["id"], campaign_name=run["campaign_name"], campaign_text=run["campaign_text"],
        campaign=run["campaign"], status=run["status"], started_at=_aware(run["started_at"]),
        finished_at=_aware(run["finished_at"]), fingerprints=prints, measurements=result,
        failed_attempts=failed, targets=described, fingerprint_meta=probe_meta,
        spec=_spec(run["spec"], run["campaign_text"], spec_of_text), tags=run["tags"] or {}, note=run["note"], health=health)
