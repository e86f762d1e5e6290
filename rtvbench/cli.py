"""The `rtvbench` command line.

Exit codes (as listed in README.md): 0 ok, 1 requirements failed, 2 usage or input error,
3 target or environment failure, 4 a verdict left undecided under --strict; 130 when the user interrupts a run (the shell
convention for SIGINT), 70 for a bug in rtvbench itself. Every error reaches the
user as one sentence, never as a traceback (RTVBENCH_DEBUG=1 shows tracebacks).
"""

from __future__ import annotations

import gc
import json
import os
import re
import shlex
import sys
from pathlib import Path

import click
from click.core import ParameterSource
# Rich is imported by what prints through it (the consoles below, tables): --help and validate do not.

from rtvbench import file_modes, pydantic_plugins
from rtvbench.errors import (EXIT_INCONCLUSIVE, EXIT_INTERRUPTED, EXIT_OK, EXIT_REQUIREMENTS_FAILED,
                             EXIT_TARGET, InputError, RtvbenchError)
from rtvbench.report import EXTENSIONS, FORMATS, render_evaluation
from rtvbench.terminal import LazyConsole, plain, without_controls

EXIT_INTERNAL = 70

# rtvbench's models use no pydantic plugins: the command line neither looks for them nor imports
# what looking takes.
pydantic_plugins.look_for_none()

out = LazyConsole(highlight=False, soft_wrap=True)
err = LazyConsole(stderr=True, highlight=False, soft_wrap=True)


def _store_option(f):
    # On the group and on every command, so `rtvbench --store URL list` and
    # `rtvbench list --store URL` both work; the command's own value wins.
    return click.option("--store", "store_url", metavar="URL", envvar="RTVBENCH_STORE",
                        help="Result store: a SQLAlchemy URL (default: sqlite:///"
                             "rtvbench-results/rtvbench.db in the working directory; a shared one: "
                             "postgresql://USER@HOST/DB, with the rtvbench[postgres] extra).")(f)


def _store_given(ctx: click.Context, store_url: str | None) -> str | None:
    """The --store URL as the user typed it; None when there is none or it came from RTVBENCH_STORE
    (which the command rtvbench suggests inherits anyway)."""
    for c, value in ((ctx, store_url), (ctx.parent, ctx.obj.get("store_url"))):
        if c is not None and value:
            return None if c.get_parameter_source("store_url") == ParameterSource.ENVIRONMENT else value
    return None


def resume_hint(store_url: str | None, campaign: str | None) -> str:
    """The command that continues an interrupted run. A store URL's password is never printed: it
    shows as ***, for the user to put back."""
    from rtvbench.store.db import without_password

    again = ["rtvbench", "run", "--resume"]
    if store_url:
        again += ["--store", without_password(store_url)]
    return shlex.join(again + ([campaign] if campaign else []))


def _store(ctx: click.Context, store_url: str | None, write: bool = False):
    from rtvbench.store import open_store
    return open_store(store_url or ctx.obj.get("store_url"), write=write)


def _reading(ctx: click.Context, store_url: str | None):
    """The store, to read runs from (store.reading: without SQLAlchemy where it can)."""
    from rtvbench.store.reading import open_reading
    return open_reading(store_url or ctx.obj.get("store_url"))


_READERS = ("list", "show", "report", "check", "compare", "history", "publish")
#: commands that end moments after they start
_BRIEF = ("list", "show", "validate")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@_store_option
@click.version_option(package_name="rtvbench")
@click.pass_context
def cli(ctx: click.Context, store_url: str | None) -> None:
    """Measure real-time and virtualization behaviour of a platform, compare, report."""
    ctx.ensure_object(dict)
    ctx.obj["store_url"] = store_url
    if ctx.invoked_subcommand in _READERS:
        # numpy's OpenBLAS starts a thread per CPU that spins while it waits: 0.2 s of CPU on two CPUs
        # for a report, whose matrices are too small to be split, for the same figures. Only for the
        # commands that read runs: the variable is inherited by every tool `run` starts. A value the
        # user set is kept.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    file_modes.umask()          # a malformed RTVBENCH_UMASK is refused before any work
    if ctx.invoked_subcommand not in _BRIEF:
        # What killed runs left in /dev/shm and the temporary directory. The brief commands make no
        # such file and leave it to the next other command: finding the temporary directory imports
        # tempfile and shutil, a third of an interpreter start.
        from rtvbench import run_files
        run_files.sweep()
        # Only a target logs (labgrid's place, as it power-cycles or releases), and the brief commands
        # drive none: they start without the logging module (about 4 ms).
        _say_library_warnings()
    if ctx.obj.get("own_process") and ctx.invoked_subcommand in _BRIEF:
        # Their imports (pydantic's models, numpy, the decoders) make objects by the hundred thousand,
        # and the cyclic collector's passes over them were about 4 % of their start; the process ends
        # moments later, which frees everything anyway. Not inside a caller's process (a test).
        gc.disable()


# ---------------------------------------------------------------------------
# helpers shared by commands


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "campaign"


def _write_report(ev, fmt: str, path: Path | None, plots: bool = True) -> Path:
    """Write the report of an evaluated run; its absolute path."""
    run = ev.data.run
    if path is None:
        from rtvbench.store import RESULTS_DIR
        path = RESULTS_DIR / f"{_slug(run.campaign_name)}-{run.id}.{EXTENSIONS.get(fmt, fmt)}"
    return _write_file(path, render_evaluation(ev, fmt, plots), "-o")


def _write_file(path: Path, body: bytes | str, option: str) -> Path:
    """Write a report file (`option` names where its path came from); its absolute path."""
    path = path.absolute()
    # Written beside the target and renamed over it: a full disk leaves the previous report, not half a one.
    try:
        file_modes.make_dirs(path.parent)
        file_modes.replace_file(path, _encoded(body))
    except OSError as e:
        raise RtvbenchError(f"cannot write the report to {path} ({e.strerror}); "
                            f"choose another path with {option}.") from None
    return path


def _encoded(report: str | bytes) -> bytes:
    """A report as the bytes of its file: the text formats in UTF-8, a PDF as it is."""
    return report.encode("utf-8") if isinstance(report, str) else report


def _tags(given: tuple[str, ...]) -> dict[str, str]:
    """KEY=VALUE options as a dict; a malformed one is an input error naming it."""
    out = {}
    for t in given:
        key, sep, value = t.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--tag {t!r} is not KEY=VALUE; write it as, e.g., --tag bsp=5.2.")
        out[key.strip()] = value.strip()
    return out


def _tag_text(tags: dict[str, str]) -> str:
    return plain(" ".join(f"{k}={v}" for k, v in tags.items()))


def _spec_of_text(text: str):
    """A run stored without a readable spec: its campaign text validated again with today's models
    (imported here: only old runs need them, and through them every kind)."""
    from rtvbench.campaign.reader import stored_spec
    try:
        return stored_spec(text)
    except InputError:
        return None


def _load_run(store, run_id: int, bucket_tables: bool = True):
    from rtvbench.store import load_run
    return load_run(store, run_id, _spec_of_text, bucket_tables)


def _known_figure(kind: str, figure: str) -> bool:
    """analysis.metrics.known_figure, imported (with the decoders and numpy) by the first requirement
    that names a figure: a campaign without requirements is validated without them."""
    from rtvbench.analysis.metrics import known_figure
    return known_figure(kind, figure)


def _evaluated(ctx: click.Context, store_url: str | None, ref: str | None):
    """The evaluation of the stored run `ref` names (see `--campaign`)."""
    from rtvbench.analysis.evaluation import evaluate_run
    from rtvbench.store import resolve_run

    store = _reading(ctx, store_url)
    return evaluate_run(_load_run(store, resolve_run(store, ref)))


def _iso(t) -> str | None:
    return None if t is None else t.isoformat()


def _print_json(value) -> None:
    # Plain stdout, not the Rich console: its markup and wrapping would corrupt the document.
    sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")
    sys.stdout.flush()


def _requirement_text(req: dict) -> str:
    if "overhead" in req:
        scope = f" under {', '.join(req['loads'])}" if req.get("loads") else ""
        return (f"{req['overhead']}: {req['candidate']} vs {req['baseline']}{scope} "
                f"<= +{req['max_percent']} %")
    bounds = []
    if req.get("min") is not None:
        bounds.append(f">= {req['min']}")
    if req.get("max") is not None:
        bounds.append(f"<= {req['max']}")
    scope = [", ".join(req[k]) for k in ("environments", "loads") if req.get(k)]
    return f"{req['metric']} {' and '.join(bounds)}" + (f" ({'; '.join(scope)})" if scope else "")


def _headline(ev) -> None:
    """The key results, one table per benchmark kind: what the run measured, before the verdicts."""
    from rtvbench.report import headline

    for t in headline(ev):
        _print_table(t)


def _print_table(t) -> None:
    """A report table (rtvbench.report.tables.Table) on the console, its row classes as colours."""
    from rich.table import Table
    table = Table(title=plain(t.caption), title_justify="left")
    lo, hi = t.numeric_from or 3, t.numeric_to or len(t.header)
    for i, col in enumerate(t.header):
        table.add_column(plain(col), justify="right" if lo <= i < hi else "left")
    for row in t.rows:
        style = {"failed": "red", "unclean": "yellow", "fail": "red", "inconclusive": "yellow"}.get(row.css or "", "")
        table.add_row(*(plain(c) for c in row.cells), style=style)
    _print_whole(table)


_UNBOUNDED_WIDTH = 100_000


def _print_whole(table) -> None:
    """A Rich table on stdout: fitted to a terminal's width, but into a file or a pipe (a CI log)
    at its natural width, since a header cut to "kernel_rel…" or a number split over two lines
    is misread and nobody can widen the window afterwards."""
    if out.is_terminal:
        out.print(table)
        return
    from rich.console import Console
    # A table that does not expand renders at its natural width on a console wider than it: no need
    # to measure it first (measuring is a second pass over every cell, a third of `show`'s work).
    Console(file=out.file, highlight=False, width=_UNBOUNDED_WIDTH).print(table)


def _verdicts(ev, strict: bool = False) -> int:
    """Print the requirements' verdicts with their reasons; the exit code they mean (under `strict`,
    an undecided requirement, or none at all, is not a pass)."""
    from rich.table import Table
    verdicts = ev.verdicts
    if not verdicts:
        if strict:
            run = ev.data.run
            return _undecided(f"run {run.id} of {run.campaign_name} has no requirements, so nothing was decided",
                              [], "add requirements to the campaign or drop --strict")
        return EXIT_OK
    table = Table(title="Requirements", title_justify="left")
    for col in ("Requirement", "Verdict", "Reason"):
        table.add_column(col)
    colours = {"PASS": "green", "FAIL": "red", "INCONCLUSIVE": "yellow"}
    for v in verdicts:
        table.add_row(plain(getattr(v, "title", None) or _requirement_text(v.requirement)),
                      f"[{colours.get(v.status, 'white')}]{v.status}[/]", plain(v.reason))
    _print_whole(table)
    counts = {s: sum(v.status == s for v in verdicts) for s in colours}
    out.print(", ".join(f"{n} {s}" for s, n in counts.items()))
    if counts["FAIL"]:
        return EXIT_REQUIREMENTS_FAILED
    if strict and counts["INCONCLUSIVE"]:
        undecided = [(getattr(v, "title", None) or _requirement_text(v.requirement), v.reason)
                     for v in verdicts if v.status == "INCONCLUSIVE"]
        return _undecided(f"{len(undecided)} of {len(verdicts)} requirements could not be decided", undecided,
                          "measure more repetitions or on a quieter machine, or drop --strict")
    return EXIT_OK


def _undecided(what: str, items: list[tuple[str, str]], fix: str) -> int:
    """Say in one sentence why a --strict gate did not pass (the first few undecided verdicts with their
    reasons); the exit code that means it."""
    shown = [f"{name} ({reason.strip().rstrip('.')})" for name, reason in items[:3]]
    more = f" and {len(items) - 3} more" if len(items) > 3 else ""
    listed = f": {'; '.join(shown)}{more}" if shown else ""
    err.print(plain(f"rtvbench: --strict: {what}{listed}; {fix}."))
    return EXIT_INCONCLUSIVE


def _strict_option(f):
    return click.option("--strict", is_flag=True,
                        help="Fail (exit 4) when a verdict is INCONCLUSIVE or there is none: a gate must not "
                             "pass on what it could not decide.")(f)


def _jobs_option(f):
    return click.option("--jobs", "jobs", type=click.IntRange(1, 256), metavar="N",
                        help="Measure up to N lanes at once: groups of machines (boards) no other lane "
                             "touches, each measuring its part of the plan in order (default: the "
                             "campaign's `jobs`, else 1, one measurement at a time).")(f)


def _mapping(given: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for m in given:
        old, sep, new = m.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise InputError(f"--map {m!r} is not NAME_IN_A=NAME_IN_B; write it as, e.g., --map native=board_b.")
        out[old.strip()] = new.strip()
    return out


def _across(store, baseline_ref: str, candidate_ref: str, maps: tuple[str, ...], max_percent: float | None,
            metrics: tuple[str, ...]):
    """Run `candidate_ref` against run `baseline_ref`, both loaded from one store."""
    from rtvbench.analysis.across_runs import compare_runs
    from rtvbench.analysis.dataset import RunData
    from rtvbench.store import resolve_run

    a, b = (RunData(_load_run(store, resolve_run(store, ref))) for ref in (baseline_ref, candidate_ref))
    return compare_runs(a, b, _mapping(maps), max_percent, list(metrics))


def _across_options(f):
    # `compare` and `report --baseline` rename names alike.
    return click.option("--map", "maps", metavar="A=B", multiple=True,
                        help="An environment, load or benchmark named A in the baseline run is B in the other "
                             "(repeatable).")(f)


# ---------------------------------------------------------------------------
# commands


@cli.command()
@click.argument("campaign", required=False)
@click.option("--resume", is_flag=True,
              help="Continue the latest unfinished run of this campaign instead of starting one.")
@click.option("--export-json", "export_json", metavar="PATH", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the report as JSON to PATH (what `report --format json` writes), for a "
                   "CI job that reads the results.")
@click.option("--tag", "tags", metavar="KEY=VALUE", multiple=True,
              help="Store KEY=VALUE with the run (repeatable): `list --tag` selects runs by it.")
@click.option("--note", metavar="TEXT", help="Store TEXT with the run (shown by list, show and the report).")
@click.option("--reserve-timeout", "reserve_timeout", metavar="TIME", default="5m", show_default=True,
              help="How long to wait for a busy labgrid place before giving up without measuring: 45s, 30m.")
@_jobs_option
@_strict_option
@_store_option
@click.pass_context
def run(ctx: click.Context, campaign: str | None, resume: bool, export_json: Path | None,
        tags: tuple[str, ...], note: str | None, reserve_timeout: str, jobs: int | None, strict: bool,
        store_url: str | None) -> int:
    """Run CAMPAIGN (default: the built-in "evaluate this machine"), then report."""
    from rtvbench.analysis.evaluation import evaluate_run
    from rtvbench.campaign.reader import load_campaign
    from rtvbench.runner.run import Runner

    tagged = _tags(tags)
    reserve_s = _seconds(reserve_timeout, "--reserve-timeout")
    if resume and (tagged or note):
        raise InputError("--tag and --note describe a run as it starts; a resumed run keeps its own. "
                         "Drop them, or start a new run without --resume.")
    c = load_campaign(campaign, _known_figure)
    engine = _store(ctx, store_url, write=True)
    outcome = Runner(c, engine, err, tagged, note, reserve_timeout_s=reserve_s, jobs=jobs).run(resume=resume)
    if outcome.interrupted:
        err.print(f"Interrupted: run {outcome.run_id} is saved with every finished measurement; "
                  f"continue it with `{plain(resume_hint(_store_given(ctx, store_url), campaign))}`.")
        return EXIT_INTERRUPTED

    result = _load_run(engine, outcome.run_id)
    statuses = [m.status for m in result.measurements]
    ok = statuses.count("ok")
    out.print(f"Run {result.id} of {plain(c.name)} finished: {ok} of {len(statuses)} measurements ok"
              + ("." if ok == len(statuses) else
                 f"; see `rtvbench show {result.id}` for the others."))
    ev = evaluate_run(result)
    path = _write_report(ev, "html", None)
    if export_json is not None:
        out.print(f"JSON report: {plain(_write_report(ev, 'json', export_json))}")
    if ok == 0:
        out.print(f"Report: {plain(path)}")
        err.print(f"rtvbench: no measurement of run {result.id} succeeded; "
                  f"`rtvbench show {result.id}` lists their errors.")
        return EXIT_TARGET
    _headline(ev)
    code = _verdicts(ev, strict)
    out.print(f"Report: {plain(path)}")
    return code


_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(s|m|h|d)?\s*$")


def _seconds(text: str, option: str) -> float:
    """"90", "45s", "30m", "8h", "2d" as seconds; anything else an input error naming the option."""
    m = _DURATION.match(text)
    if not m or float(m.group(1)) <= 0:
        raise InputError(f"{option} {text!r} is not a duration; write it as, e.g., 45s, 30m, 8h or 2d.")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2) or "s"]


@cli.command()
@click.argument("campaign")
@click.option("--duration", "duration", metavar="TIME", required=True,
              help="How long to soak: 45s, 30m, 8h, 2d.")
@click.option("--check-every", "check_every", metavar="TIME", default="60s", show_default=True,
              help="How often every environment's health is checked (between measurements).")
@click.option("--export-json", "export_json", metavar="PATH", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the JSON report (with the soak's verdict) to PATH.")
@click.option("--tag", "tags", metavar="KEY=VALUE", multiple=True, help="Store KEY=VALUE with the run (repeatable).")
@click.option("--note", metavar="TEXT", help="Store TEXT with the run.")
@click.option("--reserve-timeout", "reserve_timeout", metavar="TIME", default="5m", show_default=True,
              help="How long to wait for a busy labgrid place before giving up without measuring: 45s, 30m.")
@_store_option
@click.pass_context
def soak(ctx: click.Context, campaign: str, duration: str, check_every: str, export_json: Path | None,
         tags: tuple[str, ...], note: str | None, reserve_timeout: str, store_url: str | None) -> int:
    """Run CAMPAIGN's cells round after round for a long time, checking health; end with a verdict
    (exit 1 when it needs attention: a target lost, a failed check, latency or memory rising)."""
    from rtvbench.analysis.evaluation import evaluate_run
    from rtvbench.campaign.reader import load_campaign
    from rtvbench.run_analyses.soak import section as soak_layout
    from rtvbench.run_analyses.soak.analysis import SOAK
    from rtvbench.runner.run import Runner

    duration_s, check_s = _seconds(duration, "--duration"), _seconds(check_every, "--check-every")
    reserve_s = _seconds(reserve_timeout, "--reserve-timeout")
    c = load_campaign(campaign, _known_figure)
    engine = _store(ctx, store_url, write=True)
    outcome = Runner(c, engine, err, _tags(tags), note, reserve_s).soak(duration_s, check_s)
    ev = evaluate_run(_load_run(engine, outcome.run_id))
    path = _write_report(ev, "html", None)
    if export_json is not None:
        out.print(f"JSON report: {plain(_write_report(ev, 'json', export_json))}")
    verdict = ev.part(SOAK)
    if verdict is not None:
        for t in soak_layout.tables(verdict):
            _print_table(t)
        out.print(plain(soak_layout.headline(verdict)))
    out.print(f"Report: {plain(path)}")
    if outcome.interrupted:
        err.print(f"Interrupted: run {outcome.run_id} keeps what was measured; the verdict covers that time.")
        return EXIT_INTERRUPTED
    code = _verdicts(ev)
    return EXIT_REQUIREMENTS_FAILED if verdict is None or not verdict.stable else code


@cli.command(name="import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "fmt", required=True, metavar="FORMAT",
              help="How to read FILE: cyclictest-json, cyclictest-hist, rtla-timerlat, rtla-timerlat-hist, rtla-osnoise, "
                   "stress-ng-yaml, hyperfine-json, openssl-speed, iperf3-json (docs/command.md).")
@click.option("--as-repetitions", is_flag=True,
              help="Store the FILES as the repetitions of one measurement, in one run (the tool must have "
                   "recorded the same parameters in each); without it, each file is a run of its own.")
@click.option("--environment", required=True, metavar="NAME", help="The environment the results were measured in.")
@click.option("--campaign", metavar="NAME", help="The run's campaign name (default: imported).")
@click.option("--benchmark", metavar="NAME", help="The benchmark's name (default: the format).")
@click.option("--tag", "tags", metavar="KEY=VALUE", multiple=True, help="Store KEY=VALUE with the run (repeatable).")
@click.option("--note", metavar="TEXT", help="Store TEXT with the run.")
@_store_option
@click.pass_context
def import_(ctx: click.Context, files: tuple[Path, ...], fmt: str, as_repetitions: bool, environment: str,
            campaign: str | None, benchmark: str | None, tags: tuple[str, ...], note: str | None,
            store_url: str | None) -> int:
    """Store results an external tool made elsewhere (FILES) as runs of one measurement each, or
    with --as-repetitions as one run of one repetition per file."""
    from rtvbench.runner.importer import import_repetitions, printable_path

    tagged = _tags(tags)
    engine = _store(ctx, store_url, write=True)
    for group in ([list(files)] if as_repetitions else [[f] for f in files]):
        run_id = import_repetitions(engine, group, fmt, environment, campaign, benchmark, tagged, note)
        shown = plain(printable_path(group[0])) + (f" and {len(group) - 1} more as repetitions" if len(group) > 1 else "")
        out.print(f"Run {run_id} of {plain(campaign or 'imported')}: {shown} imported as {plain(fmt)} "
                  f"in environment {plain(environment)}.")
    return EXIT_OK


@cli.command()
@click.argument("campaign")
@click.option("--json", "as_json", is_flag=True,
              help="Print what the campaign would run as a JSON object (errors still go to stderr, exit 2).")
@_jobs_option
@_store_option
def validate(campaign: str, as_json: bool, jobs: int | None, store_url: str | None) -> int:
    """Check CAMPAIGN without running anything; say which environments measure together with --jobs."""
    from rtvbench.campaign.reader import load_campaign
    from rtvbench.campaign.plan import expected_seconds, lanes, plan, wall_seconds
    from rtvbench.units import eta_text

    c = load_campaign(campaign, _known_figure)
    planned = plan(c)
    seconds = expected_seconds(c, planned)
    jobs = jobs or c.jobs
    found = lanes(c, planned)
    wall = wall_seconds(c, found, jobs)
    if as_json:
        _print_json({"campaign": c.name, "valid": True, "environments": list(c.environments),
                     "loads": list(c.loads), "benchmarks": list(c.benchmarks), "repetitions": c.repetitions,
                     "measurements": c.measurement_count, "expected_seconds": round(seconds, 1),
                     "requirements": len(c.requirements),
                     "schedule": {"jobs": jobs, "expected_seconds": round(wall, 1),
                                  "sequential_seconds": round(seconds, 1),
                                  "lanes": [{"machines": list(lane.machines),
                                             "environments": {name: c.environments[name].machine()
                                                              for name in lane.environments},
                                             "measurements": len(lane.planned),
                                             "expected_seconds": round(expected_seconds(c, lane.planned), 1)}
                                            for lane in found]}})
        return EXIT_OK
    eta = eta_text(seconds)
    click.echo(f"{without_controls(campaign)} is valid: {len(c.environments)} environment(s) x {len(c.loads)} load(s) "
               f"x {len(c.benchmarks)} benchmark(s) x {c.repetitions} repetition(s) = "
               f"{c.measurement_count} measurements, about {eta}; {len(c.requirements)} requirement(s).")
    click.echo(f"Schedule: {len(found)} lane(s), up to {jobs} at once (--jobs): about {eta_text(wall)}, "
               f"{eta} one measurement at a time.")
    for i, lane in enumerate(found, start=1):
        where = ", ".join(f"{name} on {c.environments[name].machine()}" for name in lane.environments)
        click.echo(f"  lane {i}: {without_controls(where)}: "
                   f"{len(lane.planned)} measurement(s), about {eta_text(expected_seconds(c, lane.planned))}")
    return EXIT_OK


@cli.command()
@click.option("--campaign", "ref", metavar="NAME|ID",
              help="A run id, or a campaign name for its latest run (default: the latest run).")
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default="html", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="Where to write it (default: rtvbench-results/<campaign>-<run id>.<ext>; - for stdout).")
@click.option("--baseline", "baseline_ref", metavar="RUN",
              help="Add a section comparing the run against this earlier run (an id or a campaign name).")
@click.option("--no-plots", is_flag=True,
              help="Leave the plots out of an HTML or PDF report: its tables and text only, written in a "
                   "fraction of the time (the other formats have no plots).")
@_across_options
@_store_option
@click.pass_context
def report(ctx: click.Context, ref: str | None, fmt: str, output: Path | None, baseline_ref: str | None,
           no_plots: bool, maps: tuple[str, ...], store_url: str | None) -> int:
    """Write the evaluation report of a run (exit 0 once written: `check` judges the requirements)."""
    ev = _evaluated(ctx, store_url, ref)
    if baseline_ref is not None:
        from rtvbench.analysis.across_runs import compare_runs
        from rtvbench.analysis.dataset import RunData
        from rtvbench.store import resolve_run

        store = _reading(ctx, store_url)
        ev.across = compare_runs(RunData(_load_run(store, resolve_run(store, baseline_ref))), ev.data,
                                 _mapping(maps))
    elif maps:
        raise InputError("--map renames names of the --baseline run: give --baseline RUN with it.")
    if output is not None and str(output) == "-":
        report_bytes = _encoded(render_evaluation(ev, fmt, not no_plots))
        sys.stdout.flush()                  # whatever was printed as text goes first
        sys.stdout.buffer.write(report_bytes)
        sys.stdout.flush()
        return EXIT_OK
    path = _write_report(ev, fmt, output, not no_plots)
    _verdicts(ev)
    out.print(f"Report: {plain(path)}")
    return EXIT_OK


@cli.command()
@click.option("--campaign", "ref", metavar="NAME|ID",
              help="A run id, or a campaign name for its latest run (default: the latest run).")
@_strict_option
@_store_option
@click.pass_context
def check(ctx: click.Context, ref: str | None, strict: bool, store_url: str | None) -> int:
    """Judge a run's requirements: exit 1 when any FAILs, 4 under --strict when one is INCONCLUSIVE, 0 otherwise."""
    ev = _evaluated(ctx, store_url, ref)
    if not ev.verdicts and not strict:
        out.print(f"Run {ev.data.run.id} of {plain(ev.data.run.campaign_name)} has no requirements to check.")
        return EXIT_OK
    return _verdicts(ev, strict)


@cli.command()
@click.argument("baseline_ref", metavar="RUN_A")
@click.argument("candidate_ref", metavar="RUN_B")
@_across_options
@click.option("--metric", "metrics", metavar="BENCHMARK.FIGURE", multiple=True,
              help="Compare only these figures (repeatable; default: every figure the kind compares).")
@click.option("--max-percent", type=float, metavar="PERCENT",
              help="Judge each overhead of RUN_B over RUN_A against this bound; exit 1 when one FAILs.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as a JSON document.")
@click.option("--junit", "junit_path", metavar="PATH", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the comparisons as JUnit XML to PATH, a test case per figure and cell.")
@_strict_option
@_store_option
@click.pass_context
def compare(ctx: click.Context, baseline_ref: str, candidate_ref: str, maps: tuple[str, ...],
            metrics: tuple[str, ...], max_percent: float | None, as_json: bool, junit_path: Path | None,
            strict: bool, store_url: str | None) -> int:
    """Compare run RUN_B against run RUN_A (ids, or campaign names for their latest runs), cell by cell."""
    from rtvbench.report import across_runs as layout

    if strict and max_percent is None:
        raise InputError("--strict judges the comparisons against a bound: give --max-percent PERCENT with it.")
    x = _across(_reading(ctx, store_url), baseline_ref, candidate_ref, maps, max_percent, metrics)
    if as_json:
        _print_json(layout.document(x))
    else:
        out.print(plain(layout.title(x)))
        for t in layout.tables(x) + layout.fingerprint_tables(x):
            _print_table(t)
        for sentence in layout.unmatched_sentences(x):
            out.print(plain(sentence))
        if not x.comparisons:
            out.print("No cell of one run matches a cell of the other: map the names that differ with --map A=B.")
        if x.status is not None:
            judged = [c.status for c in x.comparisons]
            out.print(", ".join(f"{judged.count(s)} {s}" for s in ("PASS", "FAIL", "INCONCLUSIVE")))
    if junit_path is not None:
        from rtvbench.report.junit import render_junit_across
        written = _write_file(junit_path, render_junit_across(x), "--junit")
        (err if as_json else out).print(f"JUnit report: {plain(written)}")
    if x.status == "FAIL":
        return EXIT_REQUIREMENTS_FAILED
    if strict and x.status == "INCONCLUSIVE":
        return _undecided_comparisons(x)
    return EXIT_OK


def _undecided_comparisons(x) -> int:
    from rtvbench.report.junit import comparison_name

    a, b = x.baseline.run.id, x.candidate.run.id
    if not x.comparisons:
        return _undecided(f"no cell of run {b} matches a cell of run {a}, so nothing was compared", [],
                          "map the names that differ with --map A=B, or compare runs of the same campaign")
    undecided = [(comparison_name(c), c.reason) for c in x.comparisons if c.status == "INCONCLUSIVE"]
    return _undecided(f"{len(undecided)} of {len(x.comparisons)} comparisons of run {b} against run {a} are "
                      "INCONCLUSIVE", undecided,
                      "measure at least 3 repetitions per side, on a quieter machine, or drop --strict")


@cli.command()
@click.argument("metric", metavar="BENCHMARK.FIGURE")
@click.option("--environment", "environments", metavar="NAME", multiple=True,
              help="Only this environment (repeatable; default: every one that measured it).")
@click.option("--load", "loads", metavar="NAME", multiple=True, help="Only this load (repeatable).")
@click.option("--campaign", "campaign_name", metavar="NAME", help="Only runs of this campaign.")
@click.option("--tag", "tags", metavar="KEY=VALUE", multiple=True, help="Only runs with this tag (repeatable).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="The figure's file, .svg or .png (default: rtvbench-results/history-<metric>.svg).")
@click.option("--json", "as_json", is_flag=True, help="Print the values as JSON (no figure is written).")
@click.option("--changes", "with_changes", is_flag=True,
              help="Also find the runs where the figure's level changed (Apache Otava, the rtvbench[changes] extra).")
@_store_option
@click.pass_context
def history(ctx: click.Context, metric: str, environments: tuple[str, ...], loads: tuple[str, ...],
            campaign_name: str | None, tags: tuple[str, ...], output: Path | None, as_json: bool,
            with_changes: bool, store_url: str | None) -> int:
    """A figure across runs (e.g. wakeup.p99_us): a table, each step's significance, and a plot."""
    from rtvbench.analysis.dataset import RunData
    from rtvbench.analysis.history import history as metric_history
    from rtvbench.analysis.kind import split_cpu
    from rtvbench.report.tables import Row, Table as ReportTable
    from rtvbench.store import list_runs
    from rtvbench.units import format_percent

    store = _reading(ctx, store_url)
    wanted = _tags(tags)
    ids = sorted(r["id"] for r in list_runs(store)
                 if (campaign_name is None or r["campaign_name"] == campaign_name)
                 and all(r["tags"].get(k) == v for k, v in wanted.items()))
    h = metric_history([RunData(_load_run(store, i)) for i in ids], metric, list(environments), list(loads))
    base = split_cpu(h.figure)[1]
    steps = None
    if with_changes:
        from rtvbench.analysis.changes import changes
        steps = changes(h)
    if as_json:
        _print_json({"metric": metric, **({} if steps is None else {"changes": [change_document(c) for c in steps]}),
                     "series": [
            {"environment": s.environment, "load": s.load, "points": [
                {"run": p.run_id, "started_at": _iso(p.started_at), "tags": p.tags, "values": p.values,
                 "median": p.median,
                 "against_previous": None if p.against_previous is None else {
                     "overhead_percent": p.against_previous.overhead_percent,
                     "ci95_percent": p.against_previous.ci_percent, "p_value": p.against_previous.p_value,
                     "verdict": p.against_previous.verdict}} for p in s.points]} for s in h.series]})
        return EXIT_OK
    for s in h.series:
        rows = []
        for p in s.points:
            t = p.against_previous
            step = "–" if t is None else f"{format_percent(t.overhead_percent)} ({t.verdict})"
            rows.append(Row([f"#{p.run_id}", p.started_at.strftime("%Y-%m-%d %H:%M") if p.started_at else "–",
                             _tag_text(p.tags), str(len(p.values)), h.kind.format(p.median, base),
                             f"{h.kind.format(min(p.values), base)} .. {h.kind.format(max(p.values), base)}", step],
                            "significant" if t is not None and t.verdict == "significant" else ""))
        _print_table(ReportTable(f"{metric} in {s.environment} under {s.load}",
                                 ["Run", "Started", "Tags", "n", "Median", "Min .. max", "Against the previous run"],
                                 rows, numeric_from=3, numeric_to=6))
    if steps is not None:
        _print_changes(h, steps)
    if output is None:
        from rtvbench.store import RESULTS_DIR
        output = RESULTS_DIR / f"history-{_slug(metric)}.svg"
    from rtvbench.report.history_plot import write_history_plot
    try:
        write_history_plot(h, output.absolute())
    except OSError as e:
        raise RtvbenchError(f"cannot write the figure to {output} ({e.strerror}); choose another path with -o.") from None
    out.print(f"Figure: {plain(output.absolute())}")
    return EXIT_OK


@cli.command()
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The site's directory (created; an earlier publish there is updated in place).")
@click.option("--plots/--no-plots", default=False, show_default=True,
              help="Run reports with their plots (a few times slower to publish first; docs/publish.md).")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Processes that read and report runs [default: one per CPU].")
@click.option("--json", "as_json", is_flag=True, help="Print the pages written, unchanged and removed as JSON.")
@_store_option
@click.pass_context
def publish(ctx: click.Context, output: Path, plots: bool, jobs: int | None, as_json: bool,
            store_url: str | None) -> int:
    """A static site over the whole store: runs, every figure's history, the change points (docs/publish.md)."""
    from functools import partial

    from rtvbench.publish.collect import RunEntry
    from rtvbench.publish.reading import read_runs
    from rtvbench.publish.site import publish as publish_site
    from rtvbench.store.reader import list_runs, measurement_stamps
    from rtvbench.store.reading import open_reading

    # The store each worker process opens for itself (a connection does not cross processes).
    open_store = partial(open_reading, store_url or ctx.obj.get("store_url"))
    store = _reading(ctx, store_url)
    stamps = measurement_stamps(store)
    runs = [RunEntry(r["id"], r["campaign_name"], r["status"], r["started_at"], r["finished_at"], dict(r["tags"] or {}),
                     r["note"], r["measurements"], r["ok"], stamps.get(r["id"], "")) for r in reversed(list_runs(store))]
    try:
        done = publish_site(runs, lambda todo: read_runs(store, open_store, _load_run, todo, plots, jobs), output.absolute(),
                            plots)
    except OSError as e:
        raise RtvbenchError(f"cannot write the site into {output} ({e.strerror}); choose another directory with -o.") from None
    if as_json:
        _print_json({"site": str(output.absolute()), "written": done.written, "unchanged": done.unchanged,
                     "removed": done.removed, "runs_read": done.runs_read})
        return EXIT_OK
    out.print(f"Site: {plain(output.absolute() / 'index.html')} ({len(done.written)} pages written, "
              f"{len(done.unchanged)} unchanged, {len(done.removed)} removed; {len(done.runs_read)} runs read)")
    return EXIT_OK


def change_document(c) -> dict:
    """A change point as `history --changes --json` and the published site's data give it."""
    return {"metric": c.metric, "environment": c.environment, "load": c.load, "index": c.index,
            "run_before": c.run_before, "run_after": c.run_after, "started_at": _iso(c.started_at),
            "median_before": c.median_before, "median_after": c.median_after,
            "change_percent": c.change_percent, "p_value": c.p_value, "compare": c.compare_command()}


def _print_changes(h, steps) -> None:
    from rtvbench.analysis.kind import split_cpu
    from rtvbench.report.tables import Row, Table as ReportTable
    from rtvbench.units import format_percent

    if not steps:
        out.print(f"No change point in {h.metric}: every cell's runs stay at one level.")
        return
    base = split_cpu(h.figure)[1]
    rows = [Row([f"{c.environment} / {c.load}", f"#{c.run_before} -> #{c.run_after}",
                 c.started_at.strftime("%Y-%m-%d %H:%M") if c.started_at else "–",
                 h.kind.format(c.median_before, base), h.kind.format(c.median_after, base),
                 "–" if c.change_percent is None else format_percent(c.change_percent), f"{c.p_value:.2g}",
                 c.compare_command()]) for c in steps]
    _print_table(ReportTable(f"Change points in {h.metric}",
                             ["Cell", "Between runs", "Started", "Median before", "Median after", "Change",
                              "p", "To see it"], rows, numeric_from=3, numeric_to=7))


@cli.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print the runs as a JSON array.")
@click.option("--tag", "tags", metavar="KEY=VALUE", multiple=True,
              help="Only runs stored with this tag (repeatable: all of them).")
@_store_option
@click.pass_context
def list_(ctx: click.Context, as_json: bool, tags: tuple[str, ...], store_url: str | None) -> int:
    """List the campaign runs in the store."""
    from rtvbench.store import list_runs

    wanted = _tags(tags)
    rows = [r for r in list_runs(_reading(ctx, store_url)) if all(r["tags"].get(k) == v for k, v in wanted.items())]
    if as_json:
        _print_json([{"id": r["id"], "campaign": r["campaign_name"], "status": r["status"],
                      "measurements_ok": r["ok"], "measurements": r["measurements"],
                      "started_at": _iso(r["started_at"]), "finished_at": _iso(r["finished_at"]),
                      "tags": r["tags"], "note": r["note"]} for r in rows])
        return EXIT_OK
    if not rows and wanted:
        out.print("No run in the store has " + " and ".join(f"{k}={v}" for k, v in wanted.items()) + ".")
        return EXIT_OK
    if not rows:
        out.print("The store holds no runs yet; start one with `rtvbench run`.")
        return EXIT_OK
    from rich.table import Table
    table = Table()
    for col in ("ID", "Campaign", "Status", "Measurements ok", "Started (UTC)", "Duration", "Tags", "Note"):
        table.add_column(col)
    for r in rows:
        duration = ""
        if r["finished_at"]:
            duration = f"{(r['finished_at'] - r['started_at']).total_seconds():.0f} s"
        table.add_row(str(r["id"]), plain(r["campaign_name"]), r["status"],
                      f"{r['ok']}/{r['measurements']}",
                      r["started_at"].strftime("%Y-%m-%d %H:%M:%S"), duration,
                      _tag_text(r["tags"]), plain(r["note"] or ""))
    _print_whole(table)
    return EXIT_OK


# Fingerprint fields worth a glance in `show` (the report has them all).
_SHOW_SYSINFO = ("hostname", "kernel_release", "preempt_model", "cpu_model", "cpus_online_count")


def _figures(m) -> str:
    """The first few figures the measurement's kind compares, merged over CPUs (the report has them all)."""
    from rtvbench.analysis.kind import get_kind

    kind = get_kind(m.kind)
    if kind is None or not m.results:
        return ""
    figures = kind.all_figures(m)
    shown = [f for f in kind.compared_figures(sorted(figures)) if f in figures][:4]
    return " ".join(f"{kind.label(f)}={kind.format(figures[f], f)}" for f in shown)


def _show_document(r) -> dict:
    """`show --json`: the run, each environment's fingerprint, each measurement (repetitions from 1,
    as in the JSON report) with its merged figures and why it failed; failed attempts that were retried."""
    from rtvbench.analysis.kind import get_kind

    def measurement(m) -> dict:
        kind = get_kind(m.kind)
        figures = kind.all_figures(m) if kind is not None and m.results else {}
        return {"environment": m.environment, "load": m.load, "benchmark": m.benchmark, "kind": m.kind,
                "repetition": m.repetition + 1, "attempt": m.attempt, "status": m.status, "error": m.error,
                "warnings": [w.get("code") for w in m.warnings], "figures": figures}

    return {"id": r.id, "campaign": r.campaign_name, "status": r.status, "started_at": _iso(r.started_at),
            "finished_at": _iso(r.finished_at), "tags": r.tags, "note": r.note, "environments": r.fingerprints,
            "measurements": [measurement(m) for m in r.measurements],
            "failed_attempts": [measurement(m) for m in r.failed_attempts]}


@cli.command()
@click.argument("run_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True,
              help="Print the run as a JSON object: environments' fingerprints, measurements with their figures.")
@_store_option
@click.pass_context
def show(ctx: click.Context, run_id: str, as_json: bool, store_url: str | None) -> int:
    """Show one run: its environments and measurements."""
    from rich.table import Table
    from rtvbench.store import resolve_run

    store = _reading(ctx, store_url)
    # Figures only: the histograms' buckets stay lists, read (with numpy) by a kind only where a record
    # lacks a figure its histogram gives.
    r = _load_run(store, resolve_run(store, run_id), bucket_tables=False)
    if as_json:
        _print_json(_show_document(r))
        return EXIT_OK
    finished = r.finished_at.strftime("%Y-%m-%d %H:%M:%S") if r.finished_at else "-"
    out.print(f"Run {r.id}: campaign [bold]{plain(r.campaign_name)}[/], {r.status}, "
              f"started {r.started_at:%Y-%m-%d %H:%M:%S} UTC, finished {finished}.")
    if r.tags or r.note:
        out.print("Tags: " + (_tag_text(r.tags) or "none")
                  + (f"; note: {plain(r.note)}" if r.note else ""))
    envs = Table(title="Environments", title_justify="left")
    envs.add_column("Environment")
    for key in _SHOW_SYSINFO:
        envs.add_column(key)
    for name, info in r.fingerprints.items():
        envs.add_row(plain(name), *(plain(str(info.get(k, ""))) for k in _SHOW_SYSINFO))
    _print_whole(envs)
    ms = Table(title="Measurements", title_justify="left")
    for col in ("#", "Environment", "Load", "Benchmark", "Rep", "Status", "Figures", "Note"):
        ms.add_column(col)
    colours = {"ok": "green", "error": "red", "interrupted": "yellow", "running": "yellow"}
    for i, m in enumerate(r.measurements, start=1):
        note = m.error or "; ".join(w.get("code", "") for w in m.warnings)
        ms.add_row(str(i), plain(m.environment), plain(m.load), plain(m.benchmark),
                   str(m.repetition + 1), f"[{colours.get(m.status, 'white')}]{m.status}[/]",
                   _figures(m), plain(note or ""))
    _print_whole(ms)
    for m in r.failed_attempts:
        out.print(f"[red]Failed attempt {m.attempt}[/] of {plain(m.environment)} / {plain(m.load)} / "
                  f"{plain(m.benchmark)} rep {m.repetition + 1} (retried): {plain(m.error or '')}",
                  highlight=False)
    if any(m.target_log for m in list(r.failed_attempts) + list(r.measurements)):
        out.print(f"The target's own log of each failure (a guest's console) is in `rtvbench report --campaign {r.id}`.")
    return EXIT_OK


class _KernelGroup(click.Group):
    """`rtvbench kernel`: its commands live with the qemu target's tooling, imported (with pydantic
    and every target) only when a kernel command runs, so `--help`, `list` and `report` stay quick."""

    def _group(self) -> click.Group:
        from rtvbench.targets.qemu.kernels import kernel
        return kernel

    def list_commands(self, ctx: click.Context) -> list[str]:
        return self._group().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return self._group().get_command(ctx, name)


cli.add_command(_KernelGroup(name="kernel", help="Kernel images for QEMU guests, from Debian's archive."))

# ---------------------------------------------------------------------------


def _say_library_warnings() -> None:
    """What library code has to say on the way (a target power-cycled, a place it could not release)
    is logged on the `rtvbench` logger; the CLI prints it as one line on stderr, like its errors."""
    import logging

    class SayOnStderr(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            err.print(f"rtvbench: {plain(record.getMessage())}")

    log = logging.getLogger("rtvbench")
    if not any(type(h).__name__ == "SayOnStderr" for h in log.handlers):
        log.addHandler(SayOnStderr(logging.WARNING))
    log.propagate = False       # not to a root handler of a tool it drives (labgrid's client)


def main(argv: list[str] | None = None) -> None:
    try:
        code = cli.main(args=argv, prog_name="rtvbench", standalone_mode=False, obj={"own_process": argv is None})
    except click.exceptions.Abort:          # Ctrl-C outside a run
        err.print("Interrupted.")
        code = EXIT_INTERRUPTED
    except KeyboardInterrupt:
        err.print("Interrupted.")
        code = EXIT_INTERRUPTED
    except click.ClickException as e:
        e.show()
        code = e.exit_code
    except RtvbenchError as e:
        for line in e.lines():
            err.print(plain(line))
        code = e.exit_code
    except Exception as e:                  # a bug: say so in one line, keep the trace on demand
        if os.environ.get("RTVBENCH_DEBUG", "0") not in ("", "0"):
            import traceback
            traceback.print_exc()
        err.print(f"rtvbench: internal error ({type(e).__name__}: {plain(str(e))}); rerun with "
                  "RTVBENCH_DEBUG=1 for the traceback and report it.")
        code = EXIT_INTERNAL
    if argv is None:
        # The process ends here (called with arguments, main runs inside a test). Interpreter shutdown
        # runs full garbage collections over every object the command left, and the exit frees them
        # anyway: after a large report that was 0.2 s of its 2.3 s. Frozen objects are skipped.
        gc.freeze()
    sys.exit(code if isinstance(code, int) else EXIT_OK)


if __name__ == "__main__":
    main()
