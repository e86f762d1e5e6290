"""Writing a campaign run into the store, as it happens.

Every call commits its own short transaction, so a runner killed at any moment
leaves a store holding every finished measurement and every probe line received.
Samples held for a measurement go in with its next one, and so do the probe's last lines.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Engine, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from rtvbench import __version__
from rtvbench.errors import InputError, StoreError
from rtvbench.store.lease import holder_alive, this_runner
from rtvbench.store.schema import (cpu_samples, health_checks, fingerprints, load_records, measurements, records,
                                   runs)


def now() -> datetime:
    return datetime.now(timezone.utc)


#: One writer at a time in this process: the lanes of a run (`run --jobs`), their loads' reader
#: threads and the heartbeat commit from threads of their own, and SQLite takes one writer anyway; a
#: second that upgrades its transaction while another writes would fail "database is locked" at once.
_WRITING = threading.RLock()


def _guard(fn):
    """Turn a database failure in the middle of a run into one clear StoreError."""
    def wrapper(*args, **kwargs):
        try:
            with _WRITING:
                return fn(*args, **kwargs)
        except SQLAlchemyError as e:
            raise StoreError(f"writing to the store failed ({e.__class__.__name__}: "
                             f"{getattr(e, 'orig', e)}); check the disk and the --store database, "
                             "then continue with `rtvbench run --resume`.") from None
    return wrapper


class MeasurementRecorder:
    def __init__(self, engine: Engine, measurement_id: int) -> None:
        self.engine = engine
        self.id = measurement_id
        self._held: list[dict[str, Any]] = []      # cpu_samples rows waiting for the next transaction
        self._held_records: list[dict[str, Any]] = []      # records rows waiting for it

    def _store_held(self, conn) -> None:
        if self._held_records:
            conn.execute(insert(records), self._held_records)
        if self._held:
            conn.execute(insert(cpu_samples), self._held)

    def add_record(self, seq: int, record: dict[str, Any]) -> None:
        self.add_records([(seq, record)])

    @_guard
    def add_records(self, numbered: list[tuple[int, dict[str, Any]]]) -> None:
        """Records that arrived together (seq, record), in one transaction: each commit waits for the
        disk, and lines read at one moment are stored or lost together anyway."""
        if not numbered:
            return
        rows = self._record_rows(numbered)
        with self.engine.begin() as conn:
            self._store_held(conn)
            conn.execute(insert(records), rows)
        self._held, self._held_records = [], []

    def hold_records(self, numbered: list[tuple[int, dict[str, Any]]]) -> None:
        """Records that go into the store with the measurement's next transaction, as held samples do:
        a command's last lines, whose commit would otherwise be one wait for the disk more right
        before its end's."""
        self._held_records.extend(self._record_rows(numbered))

    def _record_rows(self, numbered: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
        received_at = now()
        return [dict(measurement_id=self.id, seq=seq, type=record["type"], data=record, received_at=received_at)
                for seq, record in numbered]

    @_guard
    def add_load_record(self, load: str, seq: int, record: dict[str, Any]) -> None:
        """One line of a probe load's output. Called from the thread that reads that load's
        output while the probe measures, so it commits on its own connection like add_record."""
        with self.engine.begin() as conn:
            conn.execute(insert(load_records).values(measurement_id=self.id, load=load, seq=seq,
                                                     type=record["type"], data=record,
                                                     received_at=now()))

    @_guard
    def add_cpu_sample(self, environment: str, phase: str, counters: dict[str, dict[str, int]]) -> None:
        """/proc/stat counters of an environment before or after the probe ran."""
        with self.engine.begin() as conn:
            conn.execute(insert(cpu_samples).values(measurement_id=self.id, environment=environment,
                                                    phase=phase, data=counters, taken_at=now()))

    def hold_cpu_samples(self, environment: str, samples: dict[str, dict]) -> None:
        """Samples taken together (phase -> data) that go into the store with the measurement's next
        transaction (its next probe lines, or its end), one wait for the disk fewer each. Only a
        measurement whose runner dies before that loses them, and --resume measures it again."""
        taken_at = now()
        self._held.extend(dict(measurement_id=self.id, environment=environment, phase=phase, data=data,
                               taken_at=taken_at) for phase, data in samples.items())

    @_guard
    def finish(self, status: str, returncode: int | None = None, error: str | None = None,
               target_log: str | None = None) -> None:
        with self.engine.begin() as conn:
            self._store_held(conn)
            conn.execute(update(measurements).where(measurements.c.id == self.id).values(
                status=status, returncode=returncode, error=error, target_log=target_log,
                finished_at=now()))
        self._held, self._held_records = [], []


class RunRecorder:
    def __init__(self, engine: Engine, run_id: int) -> None:
        self.engine = engine
        self.id = run_id

    @classmethod
    @_guard
    def create(cls, engine: Engine, campaign, tags: dict[str, str] | None = None,
               note: str | None = None) -> "RunRecorder":
        with engine.begin() as conn:
            run_id = conn.execute(insert(runs).values(
                campaign_name=campaign.name, campaign_text=campaign.text, campaign=campaign.data,
                spec=campaign.spec().to_json(), campaign_hash=campaign.hash, seed=campaign.seed, status="running",
                rtvbench_version=__version__, started_at=now(), runner=this_runner(),
                heartbeat_at=now(), tags=tags or {}, note=note)).inserted_primary_key[0]
        return cls(engine, run_id)

    @classmethod
    @_guard
    def claim(cls, engine: Engine, run_id: int, campaign_name: str) -> "RunRecorder":
        """Take over an unfinished run to resume it, unless another runner still holds it (InputError).
        The row is updated only if its holder is still the one judged gone: two runners resuming at
        once cannot both win."""
        me = this_runner()
        with engine.begin() as conn:
            row = conn.execute(select(runs.c.runner, runs.c.heartbeat_at).where(runs.c.id == run_id)).first()
            holder = row.runner if row else None
            alive = holder_alive(holder, row.heartbeat_at) if holder and holder != me else None
            if alive is not None:
                raise InputError(f'run {run_id} of campaign "{campaign_name}" is being run by another rtvbench '
                                 f"({alive.words()}); wait for it to end or stop it, then resume.")
            taken = conn.execute(update(runs).where(
                runs.c.id == run_id, runs.c.runner.is_(None) if holder is None else runs.c.runner == holder)
                .values(runner=me, heartbeat_at=now(), status="running", finished_at=None)).rowcount
            if taken == 1:
                # What its runner was measuring when it died ended then: said so, and measured again.
                conn.execute(update(measurements).where(measurements.c.run_id == run_id,
                                                        measurements.c.status == "running")
                             .values(status="error", finished_at=now(),
                                     error="its runner stopped while it measured (killed or lost); measured again"))
        if taken != 1:
            raise InputError(f'run {run_id} of campaign "{campaign_name}" was just taken over by another '
                             "rtvbench; wait for it to end, then resume.")
        return cls(engine, run_id)

    @_guard
    def beat(self) -> None:
        """Say that this runner is alive and still holds the run."""
        with self.engine.begin() as conn:
            conn.execute(update(runs).where(runs.c.id == self.id, runs.c.runner == this_runner())
                         .values(heartbeat_at=now()))

    @_guard
    def set_status(self, status: str) -> None:
        """The run's status; a finished or interrupted run is released for another runner to resume."""
        ended = status in ("finished", "interrupted")
        values = dict(status=status, finished_at=now() if ended else None)
        if ended:
            values.update(runner=None, heartbeat_at=None)
        with self.engine.begin() as conn:
            conn.execute(update(runs).where(runs.c.id == self.id).values(**values))

    @_guard
    def fingerprinted(self) -> set[str]:
        with self.engine.connect() as conn:
            return set(conn.scalars(select(fingerprints.c.environment)
                                    .where(fingerprints.c.run_id == self.id)))

    @_guard
    def add_fingerprint(self, environment: str, target: dict, sysinfo: dict,
                        meta: dict | None) -> None:
        with self.engine.begin() as conn:
            conn.execute(insert(fingerprints).values(
                run_id=self.id, environment=environment, target=target, sysinfo=sysinfo,
                meta=meta, recorded_at=now()))

    @_guard
    def attempts(self) -> dict[tuple, tuple[int, str]]:
        """(environment, load, benchmark, repetition) -> (latest attempt, its status)."""
        out: dict[tuple, tuple[int, str]] = {}
        with self.engine.connect() as conn:
            rows = conn.execute(select(measurements.c.environment, measurements.c.load,
                                       measurements.c.benchmark, measurements.c.repetition,
                                       measurements.c.attempt, measurements.c.status)
                                .where(measurements.c.run_id == self.id)
                                .order_by(measurements.c.attempt))
            for env, load, bench, rep, attempt, status in rows:
                out[(env, load, bench, rep)] = (attempt, status)
        return out

    @_guard
    def add_health(self, environment: str, data: dict[str, Any]) -> None:
        """One health check of an environment, or an event of a soak (`data["event"]`)."""
        with self.engine.begin() as conn:
            conn.execute(insert(health_checks).values(run_id=self.id, environment=environment, data=data,
                                                      taken_at=now()))

    @_guard
    def start_measurement(self, *, environment: str, load: str, benchmark: str, kind: str,
                          repetition: int, attempt: int, order_index: int, command: list[str],
                          load_commands: list[str]) -> MeasurementRecorder:
        with self.engine.begin() as conn:
            mid = conn.execute(insert(measurements).values(
                run_id=self.id, environment=environment, load=load, benchmark=benchmark,
                kind=kind, repetition=repetition, attempt=attempt, order_index=order_index,
                status="running", command=command, load_commands=load_commands,
                started_at=now())).inserted_primary_key[0]
        return MeasurementRecorder(self.engine, mid)


@_guard
def latest_unfinished_run(engine: Engine, campaign_name: str) -> dict[str, Any] | None:
    """The most recent run of a campaign if it is not done, as {id, status, campaign_hash}, else None:
    it did not finish (running: its runner was killed; interrupted: stopped by the user), or it finished
    with measurements that failed, which resuming measures again."""
    with engine.connect() as conn:
        row = conn.execute(select(runs.c.id, runs.c.status, runs.c.campaign_hash)
                           .where(runs.c.campaign_name == campaign_name)
                           .order_by(runs.c.id.desc()).limit(1)).mappings().first()
        if row is None:
            return None
        if row["status"] in ("running", "interrupted"):
            return dict(row)
        latest: dict[tuple, tuple[int, str]] = {}
        for env, load, bench, rep, attempt, status in conn.execute(
                select(measurements.c.environment, measurements.c.load, measurements.c.benchmark,
                       measurements.c.repetition, measurements.c.attempt, measurements.c.status)
                .where(measurements.c.run_id == row["id"])):
            key = (env, load, bench, rep)
            if key not in latest or attempt > latest[key][0]:
                latest[key] = (attempt, status)
    return dict(row) if any(status != "ok" for _, status in latest.values()) else None
