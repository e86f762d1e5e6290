"""Run a campaign: every planned measurement, under its load, into the store.

For each measurement: start the load (in the environment its `where` names), read
/proc/stat in the measured environment, run the probe and store each line it prints
as it arrives, read /proc/stat again, stop the load. Probe loads stream their own
records into the store meanwhile. A failing measurement is recorded as an error and the
campaign goes on; Ctrl-C (or SIGTERM) stops the probe and the load, records what
was measured so far as interrupted, and leaves the run resumable. With --jobs N the
lanes of the plan (groups of machines no other lane touches) measure side by side,
each in its own thread (runner/lanes.py).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

from rich.console import Console
from rich.progress import (BarColumn, Progress, TaskProgressColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from sqlalchemy import Engine

from rtvbench.campaign.reader import Campaign
from rtvbench.benchmarks.base import AFTER_END_S, WATCHDOG_FACTOR, WATCHDOG_MARGIN_S
from rtvbench.errors import InputError, ProbeOutputError, StoreError, TargetError, TargetLost
from rtvbench.loads.base import LoadContext, LoadError, LoadSite
from rtvbench.campaign.plan import Lane, Planned, expected_seconds, involved_environments, lanes, plan, wall_seconds
from rtvbench.tomlloc import format_path
from rtvbench.preflight import check as preflight_check, fingerprint_cpus, format_warnings, unusable_cpus
from rtvbench.probe.stream import ProbeStream
from rtvbench.runner.arrivals import ArrivingLines
from rtvbench.runner.health import health_check
from rtvbench.runner.lanes import Lanes
from rtvbench.procstat import busiest_processes, cpu_deltas, parse_loadavg, parse_proc_stat, process_share
from rtvbench.runner.thermal_sampler import Samplers
from rtvbench.store import RunRecorder, latest_unfinished_run
from rtvbench.store.lease import HEARTBEAT_S
from rtvbench.targets import Background, Completed, capabilities
from rtvbench.targets.base import KILL_GRACE_S, QUICK_COMMAND_DEADLINE_S, Deadline
from rtvbench.targets.capabilities import Pausing
from rtvbench.targets.labgrid_farm import RESERVE_TIMEOUT_S, reserve_farm
from rtvbench.terminal import plain
from rtvbench.units import eta_text

#: how long the runner watches an environment before the run to see whether it is already busy
BUSY_SAMPLE_S = 0.25
#: how much of an external tool's stdout beyond its limit is kept, to show what it printed
_STDOUT_HEAD = 64 << 10


@dataclass
class Outcome:
    run_id: int
    interrupted: bool = False


@contextmanager
def _sigterm_as_interrupt():
    """SIGTERM and SIGHUP end a run like Ctrl-C does: cleanly and resumable."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _exit_words(returncode: int) -> str:
    """"exited with status 3", or "was killed by SIGKILL" for a process a signal ended."""
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _then_kill(killed: bool) -> str:
    return f", then SIGKILL after {KILL_GRACE_S:g} s" if killed else ""


def _last_lines(text: str, n: int = 3) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return " / ".join(lines[-n:]) if lines else "no diagnostics"


def _private_dir(target) -> str:
    """A new directory in the target's /tmp that only its user may enter (mktemp -d: 0700, a random
    name), so that a name another user planted there cannot redirect what a tool writes. TargetError."""
    lines: list[str] = []
    done = target.run(["mktemp", "-d", "/tmp/rtvbench-output-XXXXXXXXXX"], lines.append)
    if done.returncode != 0 or len(lines) != 1 or not lines[0].startswith("/tmp/rtvbench-output-"):
        raise TargetError(f"cannot make a directory for the command's output file in /tmp of environment "
                          f"{target.name} (mktemp -d: {done.stderr.strip() or f'exit status {done.returncode}'}); "
                          "check that /tmp there is writable.")
    return lines[0]


class _Heartbeat:
    """Tells the store every few seconds that this runner still holds its run (store.lease), from a
    thread of its own, so that a long measurement or a slow guest boot does not look like a dead runner."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, recorder: RunRecorder) -> None:
        def beat() -> None:
            while not self._stop.wait(HEARTBEAT_S):
                try:
                    recorder.beat()
                except StoreError:
                    pass            # a busy store: the next beat is in a few seconds
        self._thread = threading.Thread(target=beat, name="rtvbench-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * HEARTBEAT_S)


class Runner:
    def __init__(self, campaign: Campaign, engine: Engine, console: Console | None = None,
                 tags: dict[str, str] | None = None, note: str | None = None,
                 reserve_timeout_s: float = RESERVE_TIMEOUT_S, jobs: int | None = None) -> None:
        self.campaign = campaign
        self.reserve_timeout_s = reserve_timeout_s
        self.jobs = jobs or campaign.jobs       # lanes measuring at once; the command line's wins
        self.engine = engine
        self.tags, self.note = tags or {}, note     # stored with a new run (a resumed one keeps its own)
        self.console = console or Console(stderr=True)
        self.probes: dict[str, str] = {}
        self.heartbeat = _Heartbeat()
        self.samplers = Samplers()

    # -- the run ------------------------------------------------------------

    def run(self, resume: bool = False) -> Outcome:
        return self._guarded(lambda: self._run(resume))

    def soak(self, duration_s: float, check_every_s: float) -> Outcome:
        """Measure the campaign's cells round after round for duration_s, checking every environment's
        health every check_every_s between measurements (rtvbench.soak)."""
        return self._guarded(lambda: self._soak(duration_s, check_every_s))

    def _guarded(self, body) -> Outcome:
        try:
            # From the first connection on: a SIGTERM while a target is being reached (a board
            # booting, a place acquired) still ends in the teardown below.
            with _sigterm_as_interrupt():
                return body()
        finally:
            self.heartbeat.stop()
            self.samplers.close()
            # Connections closed, guests powered off, deployed probes removed, however the run ended.
            for target in self.campaign.environments.values():
                target.close()

    def _run(self, resume: bool) -> Outcome:
        c = self.campaign
        recorder = self._open(resume)
        attempts = recorder.attempts()
        todo = [p for p in plan(c) if attempts.get(p.key, (0, ""))[1] != "ok"]
        what = "Resuming" if resume else "Running"
        found = lanes(c, todo)
        if self.jobs > 1 and len(found) > 1:
            at_once = min(self.jobs, len(found))
            self.console.print(f"{what} campaign [bold]{plain(c.name)}[/] (run {recorder.id}): "
                               f"{len(todo)} measurement(s) in {len(found)} lanes, {at_once} at once, about "
                               f"{eta_text(wall_seconds(c, found, self.jobs))}.", highlight=False)
            return self._to_the_end(recorder, lambda: self._measure_lanes(recorder, found, attempts))
        self.console.print(f"{what} campaign [bold]{plain(c.name)}[/] (run {recorder.id}): "
                           f"{len(todo)} measurement(s), about {eta_text(expected_seconds(c, todo))}.",
                           highlight=False)
        return self._to_the_end(recorder, lambda: self._measure_all(recorder, todo, attempts))

    def _to_the_end(self, recorder: RunRecorder, measure) -> Outcome:
        """Run `measure`, then record how the run ended."""
        outcome = Outcome(recorder.id)
        try:
            measure()
            recorder.set_status("finished")
        except KeyboardInterrupt:
            outcome.interrupted = True
            recorder.set_status("interrupted")
        except TargetError:
            # A target that cannot be brought back: what was measured stays, `--resume`
            # continues once it is reachable again.
            recorder.set_status("interrupted")
            raise
        return outcome

    def _soak(self, duration_s: float, check_every_s: float) -> Outcome:
        c = self.campaign
        recorder = self._open(False)
        self.console.print(f"Soaking campaign [bold]{plain(c.name)}[/] (run {recorder.id}) for "
                           f"{eta_text(duration_s)}: every cell once per round, health checked every "
                           f"{eta_text(check_every_s)}.", highlight=False)
        deadline = time.monotonic() + duration_s

        def rounds() -> None:
            next_check, round_no, order = time.monotonic(), 0, 0
            while time.monotonic() < deadline:
                for p in plan(c, repetitions=1):
                    if time.monotonic() >= deadline:
                        break
                    if time.monotonic() >= next_check:
                        self._check_health(recorder)
                        next_check = time.monotonic() + check_every_s
                    p = Planned(p.environment, p.load, p.benchmark, round_no, order)
                    order += 1
                    status, error = self._measure(recorder, p, 1, lambda: None)
                    if status == "lost":
                        self.console.print(f"[red]target lost[/] {plain(p.label())}: {plain(error)}", highlight=False)
                        recorder.add_health(p.environment, {"event": "lost", "error": error})
                        self._reconnect()       # a TargetError here ends the soak (the run keeps its data)
                        recorder.add_health(p.environment, {"event": "recovered"})
                        self.console.print(f"[green]recovered[/] {plain(p.environment)}", highlight=False)
                        next_check = time.monotonic()       # check everything right after a recovery
                    elif status != "ok":
                        self.console.print(f"[red]{status}[/] {plain(p.label())}: {plain(error)}", highlight=False)
                round_no += 1
            self._check_health(recorder)

        return self._to_the_end(recorder, rounds)

    def _check_health(self, recorder: RunRecorder) -> None:
        """Every environment (and every neighbour guest): does its probe answer, how much memory do the
        guest and its QEMU take. A failed check is recorded, not raised: the next measurement finds out
        whether the target is lost."""
        for name, target in self.campaign.environments.items():
            guests = [(name, target, self.probes.get(name))]
            guests += [(n.environment, n.target, n.probe) for n in self._neighbours(name)] \
                if getattr(target, "neighbours", None) else []
            for env, t, probe in guests:
                recorder.add_health(env, health_check(t, probe))

    def _open(self, resume: bool) -> RunRecorder:
        """Reach every environment, then the run's record: a new one, or the one --resume continues."""
        c = self.campaign
        # A lab's boards all at once, or none: never some held while another is busy.
        reserve_farm(c.environments.values(), self.reserve_timeout_s)
        # Reach every environment before writing anything: an unreachable target
        # or a missing probe fails the command (exit 3), not each measurement.
        for name, target in c.environments.items():
            self.probes[name] = target.deploy_probe()
        for bench in c.benchmarks.values():
            if bench.peer:
                bench.check_reachable(c.environments)   # TargetError: two targets that cannot be joined
        recorder = self._resume() if resume else None
        if recorder is not None:
            self.heartbeat.start(recorder)
        have = recorder.fingerprinted() if recorder else set()
        prints = {name: self._fingerprint(name) for name in c.environments if name not in have}
        self._refuse_missing_cpus(prints)
        if recorder is None:
            recorder = RunRecorder.create(self.engine, c, self.tags, self.note)
            self.heartbeat.start(recorder)
        for name, (describe, sysinfo, meta) in prints.items():
            recorder.add_fingerprint(name, describe, sysinfo, meta)
        # What would make the figures mean less than they seem (no RT priority, a guest under TCG,
        # a load on the measured CPU ...): said before the first measurement, and in the report.
        for line in format_warnings(preflight_check(c.spec(), prints)):
            self.console.print(f"[yellow]{plain(line)}[/]", highlight=False)
        return recorder

    def _refuse_missing_cpus(self, prints: dict[str, tuple[dict, dict, dict]]) -> None:
        """CPUs the campaign pins to that a target turned out not to have (validate knows only this machine's
        and a guest's): refused before the first measurement rather than failed in every one."""
        c = self.campaign
        known = {name: cpus for name, (describe, sysinfo, _) in prints.items()
                 if (cpus := fingerprint_cpus(describe, sysinfo))}
        refused = unusable_cpus(c.spec(), known)
        if refused:
            path, message = refused[0]
            more = f" (and {len(refused) - 1} more such keys)" if len(refused) > 1 else ""
            raise InputError(f"{c.filename}: {format_path(path)}: {message}{more}; nothing was measured.")

    def _resume(self) -> RunRecorder:
        c = self.campaign
        last = latest_unfinished_run(self.engine, c.name)
        if last is None:
            raise InputError(f'campaign "{c.name}" has no unfinished run to resume; '
                             f"start a new one with `rtvbench run` without --resume.")
        if last["campaign_hash"] != c.hash:
            raise InputError(f"{c.filename} changed since run {last['id']} started; restore it to "
                             "resume that run, or start a new run without --resume.")
        return RunRecorder.claim(self.engine, last["id"], c.name)     # InputError: another runner has it

    def _fingerprint(self, env: str) -> tuple[dict, dict, dict]:
        """The environment's `rtvb-probe sysinfo` record (once per run)."""
        target = self.campaign.environments[env]
        stream = ProbeStream(f"`rtvb-probe sysinfo` in environment {env}")
        found = []

        def on_line(line: str) -> None:
            rec = stream.feed(line)
            if rec["type"] == "sysinfo":
                found.append(rec)
        try:
            done = target.run([self.probes[env], "sysinfo"], on_line, Deadline(QUICK_COMMAND_DEADLINE_S))
        except ProbeOutputError as e:
            raise TargetError(str(e)) from None
        if done.interrupted:
            raise KeyboardInterrupt
        if done.overdue:
            raise TargetError(f"`rtvb-probe sysinfo` did not end within {QUICK_COMMAND_DEADLINE_S:g} s in environment "
                              f"{env} and was stopped; check that the probe runs there (`make probe`).")
        if done.returncode != 0 or not found:
            raise TargetError(f"`rtvb-probe sysinfo` failed in environment {env} (exit "
                              f"{done.returncode}: {_last_lines(done.stderr)}); check that the probe "
                              "runs there (`make probe`).")
        describe = target.describe()
        busy = self._busy_sample(target)
        return ({**describe, "busy_before_run": busy} if busy else describe), found[0], stream.meta

    def _busy_sample(self, target) -> dict | None:
        """How busy the environment is before anything of the campaign runs: each CPU's share of
        BUSY_SAMPLE_S spent running processes and, where the target lists them, the processes
        that took it (for preflight's "already busy" warning). None when it cannot be read."""
        try:
            before, procs_before = parse_proc_stat(target.read_file("/proc/stat")), capabilities.process_ticks(target)
            time.sleep(BUSY_SAMPLE_S)
            after, procs_after = parse_proc_stat(target.read_file("/proc/stat")), capabilities.process_ticks(target)
        except (TargetError, ValueError):
            return None
        deltas = {line[3:]: d for line, d in cpu_deltas(before, after).items() if line != "cpu"}
        if not deltas:
            return None
        ticks_per_cpu = sum(sum(d.values()) for d in deltas.values()) / len(deltas)
        busiest = (busiest_processes(procs_before, procs_after, ticks_per_cpu, exclude={str(os.getpid())},
                                     least=5.0) if procs_before and procs_after else [])
        return {"seconds": BUSY_SAMPLE_S, "process_percent": {c: round(process_share(d), 1) for c, d in deltas.items()},
                "processes": [[name, pid, round(share, 1)] for name, pid, share in busiest]}

    # -- measurements -------------------------------------------------------

    def _progress(self) -> Progress:
        columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                   TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
        return Progress(*columns, console=self.console, disable=not self.console.is_terminal, transient=True)

    def _measure_all(self, recorder: RunRecorder, todo: list[Planned], attempts: dict) -> None:
        with self._progress() as progress:
            task = progress.add_task("", total=expected_seconds(self.campaign, todo) or 1)
            self._measure_in_turn(recorder, todo, attempts, progress, task, "", None, None)

    def _measure_lanes(self, recorder: RunRecorder, found: list[Lane], attempts: dict) -> None:
        """Every lane in a thread of its own, at most self.jobs at once, each named by its machines
        on its own progress line (and before each line it prints, where no progress line shows)."""
        with self._progress() as progress:
            def work(lane: Lane):
                task = progress.add_task(f"{lane.name()}: waiting",
                                         total=expected_seconds(self.campaign, lane.planned) or 1)

                def measure(stopping) -> None:
                    try:
                        self._measure_in_turn(recorder, lane.planned, attempts, progress, task,
                                              f"{lane.name()}: ", lane.environments, stopping)
                    except TargetError as e:
                        progress.console.print(f"{plain(lane.name())}: [red]stopped[/]: {plain(str(e))} The other "
                                               "lanes go on.", highlight=False)
                        raise
                    if not stopping.is_set():
                        progress.console.print(f"{plain(lane.name())}: done, {len(lane.planned)} measurement(s).",
                                               highlight=False)
                return measure
            Lanes(self.jobs).run([work(lane) for lane in found])

    def _measure_in_turn(self, recorder: RunRecorder, todo: list[Planned], attempts: dict, progress: Progress,
                         task, prefix: str, among: tuple[str, ...] | None, stopping) -> None:
        """Measure `todo` one after another, on one progress line. `among`: the environments of the
        lane (None: all), the only ones paused, resumed or reached again here; `stopping`: an Event that
        ends the lane between two measurements."""
        done_s = 0.0
        for i, p in enumerate(todo, start=1):
            if stopping is not None and stopping.is_set():
                return
            progress.update(task, description=f"{plain(prefix)}{i}/{len(todo)} {p.label()}")
            started = time.monotonic()
            expected = expected_seconds(self.campaign, [p])

            def tick(done=done_s, started=started, expected=expected):
                progress.update(task, completed=done + min(time.monotonic() - started, expected))
            attempt = attempts.get(p.key, (0, ""))[0] + 1
            status, error = self._measure(recorder, p, attempt, tick, among)
            if status == "lost":
                progress.console.print(f"{plain(prefix)}[red]target lost[/] {plain(p.label())}: {plain(error)}; "
                                       "retrying.", highlight=False)
                self._reconnect(among)
                status, error = self._measure(recorder, p, attempt + 1, tick, among)
                if status == "lost":
                    self._reconnect(among)       # for the measurements that follow
            done_s += expected
            progress.update(task, completed=done_s)
            if status != "ok":
                progress.console.print(f"{plain(prefix)}[red]{status}[/] {plain(p.label())}: {plain(error)}",
                                       highlight=False)

    def _focus(self, involved: set[str], among: tuple[str, ...] | None = None) -> None:
        """Only the environments a measurement uses run: the guests of the others are paused (an
        idle TCG guest still takes host CPU), theirs resumed. `among`: the environments of the
        measurement's lane, the only ones it may pause (another lane's are measuring)."""
        for name, target in self.campaign.environments.items():
            if name not in involved and (among is None or name in among) and isinstance(target, Pausing):
                target.pause()
        for name in involved:
            target = self.campaign.environments[name]
            if isinstance(target, Pausing):
                target.resume()

    def _neighbours(self, env: str) -> list[LoadSite]:
        """The other guests of a multi-guest environment (`count` > 1), named `<env>#2` ...,
        where `where = "neighbours"` loads run; booted together with the first."""
        guests = getattr(self.campaign.environments[env], "neighbours", None) or []
        return [LoadSite(f"{env}#{i}", guest, guest.deploy_probe()) for i, guest in enumerate(guests, start=2)]

    def _reconnect(self, among: tuple[str, ...] | None = None) -> None:
        """After a target went away: reach every environment again (a fresh boot of a crashed
        guest, a new ssh connection), or every one of the lane `among` names. A TargetError here ends
        the run, or that lane; the run stays resumable."""
        for name, target in self.campaign.environments.items():
            if among is not None and name not in among:
                continue
            try:
                self.probes[name] = target.deploy_probe()
            except TargetError as e:
                raise TargetError(f"{e} The run keeps what was measured; continue it with "
                                  "`rtvbench run --resume` once the target is back.") from None

    def _sample_cpu(self, environment: str, phase: str) -> dict[str, dict]:
        """/proc/stat of the measured environment, through its target, and what goes with it
        (phase -> data), for the store.

        Accounting is an addition to the measurement, not a condition of it: a target that
        cannot be read (no /proc, an odd kernel) just leaves the report without CPU usage."""
        target = self.campaign.environments[environment]
        samples: dict[str, dict] = {}
        try:
            samples[phase] = parse_proc_stat(target.read_file("/proc/stat"))
        except (TargetError, ValueError):
            return samples
        # What its guests cost this machine (qemu environments): CPU time of QEMU's threads, memory.
        usage = capabilities.host_usage(target)
        if usage:
            samples[f"host_{phase}"] = usage
        # Which processes took the time, where the target lists them (this machine, ssh boards).
        processes = capabilities.process_ticks(target)
        if processes:
            samples[f"processes_{phase}"] = processes
        if phase == "after":
            # How loaded the machine was over the last minute, beside what the measured CPUs did.
            try:
                samples["loadavg_after"] = parse_loadavg(target.read_file("/proc/loadavg"))
            except (TargetError, ValueError):
                pass
        return samples

    @staticmethod
    def _external_outcome(m, bench, done: Completed, stdout: list[str], stdout_bytes: int, output: str | None,
                          written: str | None, unreadable: str | None, elapsed: float) -> tuple[str, str | None]:
        """Store an external tool's output verbatim (so that it can be parsed again), then its
        figures; (status, error). A non-zero exit is a failed measurement with stderr's tail, and so
        is stdout beyond the benchmark's limit (only its head is kept) or output its parser refuses."""
        text = "".join(line + "\n" for line in stdout)
        limit = bench.max_stdout_bytes
        if stdout_bytes > limit:
            m.add_record(1, {"type": "output", "stdout": text[:_STDOUT_HEAD], "stderr": done.stderr,
                             "file": written, "returncode": done.returncode, "stdout_bytes": stdout_bytes})
            return "error", (f"the command printed {stdout_bytes:,} bytes on stdout, more than the {limit:,} a "
                             f"command's output may have; its first {_STDOUT_HEAD:,} characters are stored")
        m.add_record(1, {"type": "output", "stdout": text, "stderr": done.stderr, "file": written,
                         "returncode": done.returncode})
        within = f"the command did not end within timeout_s = {bench.timeout_s:g} s"
        if done.overdue:
            # Past `timeout` and its grace: the target's timeout did not end it, or what it started
            # kept its output open.
            return "error", (f"{within} and the {KILL_GRACE_S:g} s after it (its output stayed open, or "
                             f"`timeout` did not stop it); rtvbench sent its process group SIGTERM"
                             f"{_then_kill(done.killed)}")
        if done.returncode != 0:
            if elapsed >= bench.timeout_s:
                killed = done.returncode in (128 + signal.SIGKILL, -signal.SIGKILL)
                return "error", f"{within}; `timeout` sent it SIGTERM{_then_kill(killed)}"
            return "error", f"the command {_exit_words(done.returncode)}: {_last_lines(done.stderr)}"
        if unreadable is not None:
            return "error", f"the command's output file {unreadable.rstrip('.')}"
        if output is not None and written is None:
            return "error", f"the command ended without writing its output file {output}"
        try:
            record = bench.parse(text if output is None else written)
        except ValueError as e:
            return "error", str(e)
        except Exception as e:          # noqa: BLE001 - a parser's fault fails this measurement, not the run
            return "error", f"reading the output failed ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
        m.add_record(2, record)
        return "ok", None

    @staticmethod
    def _overdue_probe(bench, target, deadline: Deadline, done: Completed, ended: bool) -> str:
        """Why the watchdog stopped the probe, in one sentence."""
        if ended:
            why = (f"the probe printed its `end` record but did not exit within "
                   f"{AFTER_END_S * target.slowdown():g} s")
        else:
            slower = f" × {target.slowdown():g} in an emulated machine" if target.slowdown() != 1 else ""
            why = (f"the probe did not end within the watchdog's {deadline.seconds:g} s ({WATCHDOG_FACTOR:g} × "
                   f"its expected {bench.expected_seconds():g} s{slower}, plus {WATCHDOG_MARGIN_S:g} s)")
        return f"{why}; rtvbench sent its process group SIGTERM{_then_kill(done.killed)}"

    def _measure(self, recorder: RunRecorder, p: Planned, attempt: int, tick,
                 among: tuple[str, ...] | None = None) -> tuple[str, str | None]:
        """Run one measurement; return (status, error). Status "lost": a target went away during
        it (recorded as an error with the target's log); the caller reconnects and retries.
        `among`: the environments of its lane (None: every one)."""
        c = self.campaign
        target, load = c.environments[p.environment], c.loads[p.load]
        bench = c.benchmarks[p.benchmark]
        peer = bench.peer                       # where the server of a round trip runs (ipc)
        self._focus(involved_environments(c, p), among)
        sites = {name: LoadSite(name, t, self.probes[name]) for name, t in c.environments.items()}
        # A round trip's server starts first: the command stored and run names the port it chose.
        server, setup_error = None, None
        if peer:
            try:
                server = bench.start_server(sites, p.environment)
            except (LoadError, TargetLost) as e:
                setup_error = e
        # A kind that runs a program of its own (an external tool) instead of the probe: its stdout,
        # or the file it was told to write, is parsed once it ended.
        external = not bench.runs_probe
        scratch: list[str] = []             # the directory of the file an external tool writes

        def make_scratch() -> str:
            scratch.append(_private_dir(target))
            return scratch[0]
        output = None
        if external and setup_error is None:
            try:
                output = bench.output_path(make_scratch)
            except TargetError as e:
                setup_error = e
        argv = (bench.command_argv(output) if external else
                server.client_argv if server else [self.probes[p.environment], *bench.probe_args()])
        m = recorder.start_measurement(
            environment=p.environment, load=p.load, benchmark=p.benchmark, kind=bench.kind,
            repetition=p.repetition, attempt=attempt, order_index=p.order_index, command=argv,
            load_commands=load.commands())
        if setup_error is not None:
            m.finish("error", error=str(setup_error), target_log=getattr(setup_error, "log", None) or None)
            return ("lost" if isinstance(setup_error, TargetLost) else "error"), str(setup_error)
        stream = ProbeStream(f"probe output of {p.label()}")

        stdout: list[str] = []
        stdout_bytes = 0

        def handle(line: str) -> None:
            nonlocal stdout_bytes
            if external:
                # Counted on past the limit, kept only up to it: the store gets no more than that.
                if stdout_bytes <= bench.max_stdout_bytes:
                    stdout.append(line)
                stdout_bytes += len(line.encode("utf-8", "surrogateescape")) + 1
            else:
                on_line.keep(stream.count + 1, stream.feed(line))
                if stream.end is not None:
                    # An emulated machine frees a large region as slowly as it runs everything else.
                    deadline.bring_forward(AFTER_END_S * target.slowdown())
            tick()

        def store(kept) -> None:
            # The read with the probe's end record is its last: it goes in with the measurement's end,
            # moments later, one wait for the disk fewer between two probe runs. A runner that dies in
            # between leaves the measurement unfinished, which --resume measures again.
            (m.hold_records if stream.end is not None else m.add_records)(kept)
        on_line = ArrivingLines(handle, store)

        ctx = LoadContext(p.environment, sites, on_record=m.add_load_record,
                          neighbours=self._neighbours(p.environment))
        bg: Background | None = None
        load_status: int | None = None
        load_problem: str | None = None
        written: str | None = None          # the text of the file an external tool wrote
        unreadable: str | None = None       # why that file was not read
        # Thermal, frequency and throttle state beside the measurement (rtvbench.runner.thermal_sampler).
        sampler = self.samplers.for_measurement(p.environment, target, self.probes[p.environment])
        try:
            bg = load.start(ctx)
            sampler.begin()
            # /proc is read after the sampler's first sample, so that its start (through a guest's agent:
            # work of QEMU's own threads) is not counted in the measurement's CPU usage or host cost.
            # The samples are committed with the probe's first lines.
            m.hold_cpu_samples(p.environment, self._sample_cpu(p.environment, "before"))
            started = time.monotonic()
            # The watchdog: bench.deadline_s() from the start of the command.
            deadline = Deadline(bench.deadline_s(target.slowdown()))
            done: Completed = bench.execute(target, argv, on_line, deadline)
            elapsed = time.monotonic() - started
            if output is not None and done.returncode == 0 and not done.overdue:
                try:
                    written = bench.read_output(target, output)
                except TargetError as e:
                    unreadable = str(e)     # said as the measurement's error below
            after = self._sample_cpu(p.environment, "after")
            sampler.end()
            if sampler.stored() is not None:
                after["thermal"] = sampler.stored()
            m.hold_cpu_samples(p.environment, after)        # committed with the measurement's end
            if bg is not None:
                load_status = bg.poll()         # before stop(): did it end on its own?
        except TargetLost as e:
            m.finish("error", error=str(e), target_log=e.log or None)
            return "lost", str(e)
        except LoadError as e:
            m.finish("error", error=str(e))
            return "error", str(e)
        except ProbeOutputError as e:
            m.finish("error", error=str(e))
            return "error", str(e)
        except KeyboardInterrupt:
            m.finish("interrupted", error="interrupted by the user before the probe ended")
            raise
        finally:
            sampler.end()                       # idempotent
            if bg is not None:
                try:
                    bg.stop()
                except TargetLost:
                    pass                        # its environment went away: nothing left to stop
                load_problem = bg.failure()     # after stop(): its last records are in
            if server is not None:
                try:
                    server.stop()
                except TargetLost:
                    pass
            if scratch:
                try:
                    target.run(["rm", "-rf", "--", scratch[0]], lambda line: None)
                except TargetError:
                    pass                        # a leftover directory in the target's /tmp, not a failure

        own_server = server.own_time() if server is not None and peer == p.environment else None
        if own_server is not None:
            # The peer's own cell: the server took the measured environment's CPUs beside the client.
            m.hold_cpu_samples(p.environment, {"peer_server": own_server})
        status, error = "ok", None
        if done.interrupted:
            status, error = "interrupted", "interrupted by the user; the records so far are kept"
        elif load_problem is not None:
            status, error = "error", f'the output of load "{p.load}" could not be stored: {load_problem}'
        elif load_status is not None:
            status, error = "error", (f'load "{p.load}" ended during the measurement (status '
                                      f"{load_status}): {_last_lines(bg.output_tail())}")
        elif external:
            status, error = self._external_outcome(m, bench, done, stdout, stdout_bytes, output, written,
                                                   unreadable, elapsed)
        elif done.overdue:
            status, error = "error", self._overdue_probe(bench, target, deadline, done, stream.end is not None)
        elif stream.end is not None and stream.end["status"] == "error":
            # Before the exit status: the probe's own reason (e.g. which workload failed its
            # verification) says more than "status 3" and an empty stderr.
            status, error = "error", f"the probe reported an error: {stream.end.get('error')}"
        elif done.returncode != 0:
            status, error = "error", f"the probe {_exit_words(done.returncode)}: {_last_lines(done.stderr)}"
        elif stream.end is None:
            status, error = "error", "the probe ended without its `end` record"
        elif stream.end["status"] == "interrupted":
            status, error = "interrupted", "the probe was interrupted by a signal from outside rtvbench"
        elif stream.results == 0:
            status, error = "error", "the probe printed no result record"
        m.finish(status, returncode=done.returncode, error=error)
        if done.interrupted:
            raise KeyboardInterrupt
        return status, error
