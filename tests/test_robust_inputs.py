"""Inputs that used to hang, exhaust memory or end in an internal error: a campaign "file" that is a
device or a FIFO, TOML nested thousands deep, a report that cannot be written, a probe killed by a
signal, RTVBENCH_DEBUG=0. Each is one sentence and its exit code."""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import subprocess

import pytest

from host_helpers import cli_argv, cli_env, run_cli

pytestmark = pytest.mark.functional

CAMPAIGN = 'name = "r"\n[environments.native]\ntarget = "local"\n[benchmarks.w]\nkind = "latency"\nloops = 20\n'


@pytest.mark.parametrize("what", ["/dev/zero", "fifo"])
def test_a_campaign_that_is_not_a_regular_file(tmp_path, what):
    path = what
    if what == "fifo":
        path = str(tmp_path / "c.toml")
        os.mkfifo(path)
    r = run_cli("validate", path, cwd=tmp_path, env=cli_env())
    assert r.returncode == 2
    assert r.stderr.strip() == f"rtvbench: {path} is not a regular file; name the campaign's .toml file."


def test_a_campaign_too_big_to_be_one(tmp_path):
    (tmp_path / "c.toml").write_text(CAMPAIGN + "# " + "x" * (2 << 20) + "\n")
    size = (tmp_path / "c.toml").stat().st_size
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env())
    assert r.returncode == 2
    assert r.stderr.strip() == (f"rtvbench: c.toml is {size:,} bytes, more than a campaign file has "
                                "(1,048,576); name the campaign's .toml file.")


def test_toml_nested_thousands_deep_is_a_campaign_error(tmp_path):
    (tmp_path / "c.toml").write_text("name = " + "[" * 5000 + "]" * 5000 + "\n")
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env())
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines()[0] == "c.toml: invalid TOML: nested too deeply"


@pytest.mark.parametrize("value,traceback", [("0", False), ("", False), ("1", True)])
def test_only_a_set_rtvbench_debug_prints_the_traceback(tmp_path, monkeypatch, capsys, value, traceback):
    import rtvbench.store
    from rtvbench.cli import main

    def broken(engine):
        raise RuntimeError("a bug on purpose")
    monkeypatch.setattr(rtvbench.store, "list_runs", broken)
    monkeypatch.setenv("RTVBENCH_DEBUG", value)
    with pytest.raises(SystemExit) as exc:
        main(["list", "--store", f"sqlite:///{tmp_path}/s.db"])
    assert exc.value.code == 70
    err = capsys.readouterr().err
    assert "internal error (RuntimeError: a bug on purpose)" in err
    assert ("Traceback" in err) == traceback


def test_a_report_that_cannot_be_written_leaves_no_empty_file(tmp_path, probe):
    (tmp_path / "c.toml").write_text(CAMPAIGN.replace("loops = 20", 'loops = 20\npolicy = "other"'))
    env = cli_env(probe)
    assert run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env).returncode == 0
    out = tmp_path / "r.html"
    out.write_text("the previous report\n")

    # A full disk, as far as this process can tell: room for the store's shared-memory index, not for
    # the report (the HTML of this run with its plots is about 60 kB).
    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (40 << 10, 40 << 10))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    r = subprocess.run(cli_argv("report", "--store", "sqlite:///s.db", "-o", str(out)), cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120, preexec_fn=small_files)
    assert r.returncode == 3, r.stderr                  # the machine's fault, not the input's
    assert r.stderr.strip().startswith(f"rtvbench: cannot write the report to {out} (File too large)")
    assert out.read_text() == "the previous report\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".r.html")] == []


def test_a_probe_killed_by_a_signal_says_which(tmp_path):
    fake = tmp_path / "probe.sh"
    real = _real_probe()
    fake.write_text(f'#!/bin/sh\nif [ "$1" = sysinfo ]; then exec {real} "$@"; fi\nkill -KILL $$\n')
    fake.chmod(0o755)
    (tmp_path / "c.toml").write_text(CAMPAIGN)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(fake))
    assert r.returncode == 3, r.stderr
    with sqlite3.connect(tmp_path / "s.db") as conn:
        [(error,)] = conn.execute("select error from measurements").fetchall()
    assert error.startswith("the probe was killed by SIGKILL"), error


def _real_probe():
    from rtvbench.probe.binary import locate_probe
    return locate_probe()


def test_a_store_row_that_is_not_json_is_one_sentence(tmp_path, probe):
    (tmp_path / "c.toml").write_text(CAMPAIGN.replace("loops = 20", 'loops = 20\npolicy = "other"'))
    env = cli_env(probe)
    assert run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=env).returncode == 0
    with sqlite3.connect(tmp_path / "s.db") as conn:
        conn.execute("update records set data = '{not json' where type = 'result'")
    for command in (["report"], ["show", "1"]):
        r = run_cli(*command, "--store", "sqlite:///s.db", cwd=tmp_path, env=env)
        assert r.returncode == 3, r.stderr
        assert r.stderr.strip().startswith("rtvbench: the store holds a row that is not valid JSON"), r.stderr
