"""The commands that read runs read a SQLite store at the current schema through sqlite3 alone, and get
what they get through SQLAlchemy, on every kind of run; any other store takes the full path. `list`
and `--help` import no heavy stack, `validate` of a campaign without requirements no analysis stack and
the parameter models of only the targets, kinds and loads the campaign names,
`show` neither SQLAlchemy, scipy, pydantic, the analyses of a whole benchmark nor the decoders of kinds its run
lacks, and an HTML report without plots no matplotlib. The commands
that read runs keep numpy's OpenBLAS to one thread; `run` and the others leave the environment their
tools inherit alone. `list`, `show` and `validate` turn the cyclic garbage collector off in their own
process, never in a caller's."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rtvbench.campaign.reader import parse_campaign
from rtvbench.store import RunRecorder, list_runs, load_run, open_store
from rtvbench.store.reading import plain_sqlite

pytestmark = pytest.mark.functional

ROOT = Path(__file__).resolve().parent.parent
TEXT = """
name = "quick"
[environments.native]
target = "local"
[benchmarks.w]
kind = "latency"
duration_s = 1
"""


def _store(tmp_path: Path) -> str:
    """A store with a finished run (one measurement retried, one failed), a tagged run still held by a
    runner that is gone, and an empty run this process holds."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    engine = open_store(url)
    common = dict(environment="native", load="idle", benchmark="w", kind="latency", command=["p"],
                  load_commands=[])
    done = RunRecorder.create(engine, parse_campaign(TEXT))
    done.start_measurement(repetition=0, attempt=1, order_index=0, **common).finish("error", 1, "lost")
    done.start_measurement(repetition=0, attempt=2, order_index=0, **common).finish("ok", 0)
    ok = done.start_measurement(repetition=1, attempt=1, order_index=1, **common)
    for seq, rec in enumerate([{"type": "meta", "schema": 1, "params": {"cpus": [0]}},
                               {"type": "result", "cpu": "all", "max_ns": 9, "note": "é ✓"},
                               {"type": "end", "status": "ok"}], start=1):
        ok.add_record(seq, rec)
    ok.add_load_record("idle", 1, {"type": "started"})
    ok.add_cpu_sample("native", "before", {"cpu0": {"user": 1, "idle": 2}})
    ok.finish("ok", 0)
    done.add_fingerprint("native", {"kind": "local"}, {"type": "sysinfo", "hostname": "h"}, {"type": "meta"})
    done.set_status("finished")
    held = RunRecorder.create(engine, parse_campaign(TEXT), tags={"bsp": "5.2", "board": "a b"}, note="n")
    held.start_measurement(repetition=0, attempt=1, order_index=0, **common)
    RunRecorder.create(engine, parse_campaign(TEXT))
    engine.dispose()
    with sqlite3.connect(tmp_path / "s.db") as conn:      # its runner: a process that no longer exists
        conn.execute("UPDATE runs SET runner = ? WHERE id = ?", (f"{socket.gethostname()}:999999999:1", held.id))
    return url


def test_the_sqlite_read_gives_what_the_sqlalchemy_read_gives(tmp_path):
    url = _store(tmp_path)
    quick, full = plain_sqlite(url), open_store(url, write=False)
    listed = list_runs(quick)
    assert listed == list_runs(full)
    assert [(r["id"], r["status"], r["ok"], r["measurements"], r["tags"]) for r in listed] == [
        (3, "running", 0, 0, {}), (2, "abandoned", 0, 1, {"bsp": "5.2", "board": "a b"}),
        (1, "finished", 2, 2, {})]
    assert all(r["started_at"].tzinfo is not None for r in listed)
    for run_id in (1, 2, 3):
        assert load_run(quick, run_id) == load_run(full, run_id)
    run = load_run(quick, 1)
    [m0, m1] = run.measurements
    assert (m0.attempt, m0.status, m1.result("all")["note"]) == (2, "ok", "é ✓")
    assert m1.load_records == {"idle": [{"type": "started"}]} and m1.cpu_stat["before"]["cpu0"]["idle"] == 2
    assert [(m.attempt, m.error) for m in run.failed_attempts] == [(1, "lost")]
    assert run.fingerprints["native"]["hostname"] == "h" and run.finished_at.tzinfo is not None


def test_the_sqlite_read_leaves_every_other_store_to_the_full_path(tmp_path):
    url = _store(tmp_path)
    assert plain_sqlite(url) is not None
    assert plain_sqlite(url + "?timeout=5") is None
    assert plain_sqlite(f"sqlite:///{tmp_path / 'none.db'}") is None
    assert not (tmp_path / "none.db").exists()
    assert plain_sqlite("postgresql://u@h/db") is None
    with sqlite3.connect(tmp_path / "s.db") as conn:      # a store an older rtvbench wrote
        conn.execute("UPDATE alembic_version SET version_num = '0003'")
    assert plain_sqlite(url) is None
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    assert plain_sqlite(f"sqlite:///{tmp_path / 'junk.db'}") is None


def _modules_after(*argv: str) -> tuple[int, set[str], str]:
    """Exit code, the heavy packages imported and stdout of `rtvbench ARGV` in a fresh interpreter."""
    code = ("import sys\nfrom rtvbench.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n"
            "    code = e.code\nheavy = {'sqlalchemy', 'alembic', 'numpy', 'scipy', 'matplotlib', 'pydantic', 'rich',\n"
            "         'rtvbench.targets.ssh', 'rtvbench.targets.qemu', 'rtvbench.targets.labgrid_place',\n"
            "         'rtvbench.analysis.compare', 'rtvbench.kinds.latency.interference', 'rtvbench.records',\n"
            "         'logging', 'rtvbench.store.lease', 'importlib.metadata'}\n"
            "print('\\nHEAVY', sorted(heavy & set(sys.modules)), code)\n")
    r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, timeout=60)
    out, _, last = r.stdout.rpartition("\nHEAVY ")
    heavy, exit_code = last.rsplit(" ", 1)
    return int(exit_code), set(json.loads(heavy.replace("'", '"'))), out


def test_list_show_validate_and_help_leave_the_heavy_stacks_out(tmp_path):
    url = _store(tmp_path)
    code, heavy, out = _modules_after("--store", url, "list", "--json")
    assert code == 0 and heavy == {"rtvbench.store.lease"}        # it judges whether a runner is gone
    assert [r["status"] for r in json.loads(out)] == ["running", "abandoned", "finished"]
    code, heavy, out = _modules_after("--store", url, "show", "2")
    assert code == 0 and not heavy & {"sqlalchemy", "alembic", "matplotlib", "scipy", "pydantic"}
    assert "Run 2: campaign quick" in out
    golden = tmp_path / "golden.db"            # measurements with figures, a latency one among them
    with sqlite3.connect(golden) as conn:
        conn.executescript((ROOT / "tests/fixtures/golden/runs.sql").read_text(encoding="utf-8"))
    code, heavy, out = _modules_after("--store", f"sqlite:///{golden}", "show", "1")
    # latency, os and work figures, each record with its percentiles: no histogram is parsed, no numpy
    assert code == 0 and not heavy & {"sqlalchemy", "alembic", "matplotlib", "scipy", "pydantic", "numpy", "logging",
                                      "rtvbench.records", "rtvbench.store.lease"}
    # it decodes measurements: the analyses of a whole benchmark (comparisons, interference) stay out
    assert not heavy & {"rtvbench.analysis.compare", "rtvbench.kinds.latency.interference"}
    assert "p99=55.9 us" in out
    campaign = tmp_path / "small.toml"
    campaign.write_text(TEXT, encoding="utf-8")
    code, heavy, out = _modules_after("validate", str(campaign))
    assert code == 0 and not heavy & {"numpy", "scipy", "sqlalchemy", "matplotlib", "logging", "rich"} and "is valid" in out
    assert not {m for m in heavy if m.startswith("rtvbench.targets.")}       # a local campaign: no other target
    assert "rtvbench.records" not in heavy                                  # nor the types of stored records
    assert "importlib.metadata" not in heavy          # pydantic's plugin loader, with every plugin disabled
    code, heavy, out = _modules_after("--help")
    assert code == 0 and heavy == set() and "list" in out


def test_pydantic_takes_only_get_plugins_from_the_loader_rtvbench_stands_in_for():
    """rtvbench gives pydantic a plugin loader of its own while every plugin is disabled; it serves
    get_plugins alone, so a pydantic that takes anything else from its loader must fail here."""
    import importlib.util
    import re

    spec = importlib.util.find_spec("pydantic")
    package = Path(spec.origin).parent
    taken = set()
    for source in package.rglob("*.py"):
        for names in re.findall(r"from (?:\.|pydantic\.plugin\.|\.plugin\.)_loader import ([\w, ]+)",
                                source.read_text(encoding="utf-8")):
            taken |= {n.strip() for n in names.split(",")}
    assert taken == {"get_plugins"}


def _plugins_in_fresh_interpreter(setting: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if setting is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = setting
    code = ("import sys\nimport rtvbench.cli\nfrom pydantic import BaseModel\n"
            "class M(BaseModel):\n    n: int\n"
            "assert M(n='3').n == 3\n"
            "from pydantic.plugin._loader import get_plugins\n"
            "print(list(get_plugins()), 'importlib.metadata' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    return r.stdout.strip()


def test_the_command_line_validates_without_pydantic_s_plugin_loader_unless_a_plugin_is_enabled():
    assert _plugins_in_fresh_interpreter(None) == "[] False"
    assert _plugins_in_fresh_interpreter("true") == "[] False"
    # a user who disables only some plugins gets pydantic's loader, which reads the entry points
    assert _plugins_in_fresh_interpreter("some-plugin") == "[] True"


def _folder_modules_after(stage: str, *argv: str) -> tuple[int, set[str], str]:
    """Exit code, the kinds' and loads' modules of one stage imported, and stderr of `rtvbench ARGV`."""
    code = ("import sys\nfrom rtvbench.cli import main\ntry:\n    main(sys.argv[2:])\nexcept SystemExit as e:\n"
            "    code = e.code\nprint('\\nFOLDERS', ','.join(sorted(m for m in sys.modules if m.endswith('.' + "
            "sys.argv[1]) and m.startswith(('rtvbench.kinds.', 'rtvbench.loads.')))), code)\n")
    r = subprocess.run([sys.executable, "-c", code, stage, *argv], capture_output=True, text=True, cwd=ROOT,
                       timeout=60)
    modules, exit_code = r.stdout.rpartition("\nFOLDERS ")[2].split()
    return int(exit_code), set(modules.split(",")), r.stderr


def test_validate_imports_the_params_of_the_kinds_and_loads_the_campaign_names_and_no_others(tmp_path):
    campaign = tmp_path / "two.toml"
    campaign.write_text(TEXT + '[benchmarks.chase]\nkind = "mem-lat"\n[loads.busy]\nkind = "cpu"\n'
                        '[loads.quiet]\n', encoding="utf-8")
    code, modules, _ = _folder_modules_after("params", "validate", str(campaign))
    # combine's model is the reader's own (it checks what a combination names), the others are named
    assert code == 0 and modules == {"rtvbench.kinds.latency.params", "rtvbench.kinds.mem_lat.params",
                                     "rtvbench.loads.cpu.params", "rtvbench.loads.idle.params",
                                     "rtvbench.loads.combine.params"}
    # a kind no folder has: every kind is imported, so that the message lists every supported one
    campaign.write_text(TEXT.replace('"latency"', '"lateny"'), encoding="utf-8")
    code, modules, err = _folder_modules_after("params", "validate", str(campaign))
    kinds = {p.name for p in (ROOT / "rtvbench/kinds").iterdir() if (p / "params.py").exists()}
    assert code == 2 and {m.split(".")[2] for m in modules if m.startswith("rtvbench.kinds.")} == kinds
    assert 'unknown benchmark kind "lateny"' in err and '"mem-lat"' in err and '"latency"' in err


def test_the_figures_show_reads_are_the_figures_a_decode_gives(tmp_path):
    """Kind.all_figures of a run loaded with its buckets as lists (show's way) is decode(m).figures of
    the run loaded with bucket tables, key for key in the same order, for every golden measurement and
    for latency records that omit percentiles their histogram then gives."""
    from rtvbench.analysis.kind import get_kind

    golden = tmp_path / "golden.db"
    with sqlite3.connect(golden) as conn:
        conn.executescript((ROOT / "tests/fixtures/golden/runs.sql").read_text(encoding="utf-8"))
        # a latency measurement whose records lack p50 and p99 (an older probe's): the histogram gives them
        conn.execute("UPDATE records SET data = json_remove(data, '$.p50_ns', '$.p99_ns') WHERE json_extract(data, "
                     "'$.type') = 'result' AND measurement_id = (SELECT min(id) FROM measurements WHERE kind = "
                     "'latency' AND run_id = 1)")
    reading = plain_sqlite(f"sqlite:///{golden}")
    compared = 0
    for run_id in (1, 2, 3):
        lists, tables = load_run(reading, run_id, bucket_tables=False), load_run(reading, run_id)
        for a, b in zip(lists.measurements, tables.measurements, strict=True):
            kind = get_kind(a.kind)
            assert list(kind.all_figures(a).items()) == list(kind.decode(b).figures.items()), (run_id, a.id)
            compared += bool(a.results)
    assert compared == 38
    m = next(m for m in load_run(reading, 1, bucket_tables=False).measurements if m.kind == "latency")
    figures = get_kind("latency").all_figures(m)
    assert figures["p99_us"] > figures["p50_us"] > 0 and "cpu0.p99_us" in figures


def test_show_imports_the_decoders_of_the_run_s_kinds_and_no_others(tmp_path):
    code, modules, _ = _folder_modules_after("decode", "--store", _store(tmp_path), "show", "1")
    assert code == 0 and modules == {"rtvbench.kinds.latency.decode"}


def test_an_html_report_without_plots_has_none_and_never_imports_matplotlib(tmp_path):
    db = tmp_path / "golden.db"
    with sqlite3.connect(db) as conn:
        conn.executescript((ROOT / "tests/fixtures/golden/runs.sql").read_text(encoding="utf-8"))
    bare, full = tmp_path / "bare.html", tmp_path / "full.html"
    code, heavy, _ = _modules_after("--store", f"sqlite:///{db}", "report", "--campaign", "1", "--no-plots",
                                    "-o", str(bare))
    assert code == 0 and "matplotlib" not in heavy
    code, heavy, _ = _modules_after("--store", f"sqlite:///{db}", "report", "--campaign", "1", "-o", str(full))
    assert code == 0 and "matplotlib" in heavy
    assert bare.read_text(encoding="utf-8").count("<svg") == 0
    assert full.read_text(encoding="utf-8").count("<svg") > 0


def _collector_after(own_process: bool, *argv: str) -> bool:
    """Whether the cyclic garbage collector is on after `rtvbench ARGV`, run as the process's own command
    (main() without arguments, as the console script does) or called by a caller (main(ARGV))."""
    code = ("import atexit, gc, sys\nfrom rtvbench.cli import main\n"
            "atexit.register(lambda: print('\\nGC', gc.isenabled()))\n"
            "if sys.argv[1] == 'own':\n    sys.argv[1:2] = []\n    main()\n"
            "try:\n    main(sys.argv[2:])\nexcept SystemExit:\n    pass\n")
    r = subprocess.run([sys.executable, "-c", code, "own" if own_process else "caller", *argv], capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    return r.stdout.rpartition("\nGC ")[2].strip() == "True"


def test_the_brief_commands_run_without_the_cyclic_collector_in_their_own_process_only(tmp_path):
    url = _store(tmp_path)
    campaign = tmp_path / "small.toml"
    campaign.write_text(TEXT, encoding="utf-8")
    for argv in (("--store", url, "list"), ("--store", url, "show", "1"), ("validate", str(campaign))):
        assert not _collector_after(True, *argv), argv
        assert _collector_after(False, *argv), argv          # a caller's process keeps its collector
    assert _collector_after(True, "--store", url, "report", "--campaign", "1", "--format", "json",
                            "-o", str(tmp_path / "r.json"))
    assert _collector_after(True, "kernel", "--help")


def test_the_commands_that_drive_targets_say_what_a_target_logs_on_stderr_and_the_brief_ones_need_no_logging():
    """Only a target logs (labgrid's place); list, show and validate, which drive none, start without the
    logging module, and every other command prints what a target logs as one `rtvbench:` line."""
    code = ("import logging, sys\nfrom rtvbench.cli import main\ntry:\n    main(['kernel', '--help'])\n"
            "except SystemExit:\n    pass\nlogging.getLogger('rtvbench.targets.labgrid_place').warning('place a [b] lost')\n"
            "logging.getLogger('rtvbench.targets.labgrid_place').info('not said')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0 and r.stderr == "rtvbench: place a [b] lost\n"


def _blas_after(env: dict[str, str], *argv: str) -> tuple[int, str | None, int]:
    """Exit code, OPENBLAS_NUM_THREADS and the number of threads of the process after `rtvbench ARGV`."""
    code = ("import os, sys\nfrom rtvbench.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n"
            "    code = e.code\nprint('\\nBLAS', code, os.environ.get('OPENBLAS_NUM_THREADS'), "
            "len(os.listdir('/proc/self/task')))\n")
    r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, timeout=60,
                       env=env)
    exit_code, value, threads = r.stdout.rpartition("\nBLAS ")[2].split()
    return int(exit_code), None if value == "None" else value, int(threads)


def test_the_commands_that_read_runs_keep_numpy_to_one_thread_and_run_leaves_it_alone(tmp_path):
    db = tmp_path / "golden.db"
    with sqlite3.connect(db) as conn:
        conn.executescript((ROOT / "tests/fixtures/golden/runs.sql").read_text(encoding="utf-8"))
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    report = ("--store", f"sqlite:///{db}", "report", "--campaign", "1", "--no-plots", "-o", str(tmp_path / "r.html"))
    assert _blas_after(env, *report) == (0, "1", 1)
    assert _blas_after({**env, "OPENBLAS_NUM_THREADS": "2"}, *report)[:2] == (0, "2")
    campaign = tmp_path / "small.toml"
    campaign.write_text(TEXT, encoding="utf-8")
    assert _blas_after(env, "validate", str(campaign))[:2] == (0, None)
