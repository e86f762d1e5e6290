"""Helpers of the host-side tests: run the CLI, write campaigns, find processes."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HELPERS = Path(__file__).resolve().parent / "helpers"
BUSY_LOAD = HELPERS / "busy_load.py"
FAKE_PROBE = HELPERS / "fake_probe.py"


def cli_env(probe: Path | str | None = None, **extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), **extra)
    if probe is not None:
        env["RTVBENCH_PROBE"] = str(probe)
    return env


def cli_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "rtvbench", *args]


def run_cli(*args: str, cwd: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(cli_argv(*args), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def refuses_once(cwd: Path, said: str) -> None:
    """`validate c.toml` in `cwd` finds exactly one problem, said in words including `said` (exit 2)."""
    r = run_cli("validate", "c.toml", cwd=cwd, env=cli_env())
    assert r.returncode == 2, r.stderr
    assert said in r.stderr
    assert "rtvbench: 1 problem in c.toml" in r.stderr and "Traceback" not in r.stderr


def json_report(cwd: Path) -> dict:
    """The JSON report of the run in the store s.db in `cwd`."""
    r = run_cli("report", "--store", "sqlite:///s.db", "--format", "json", "-o", "-", cwd=cwd, env=cli_env())
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def work_campaign(name: str, campaign_repetitions: int, **benchmark) -> str:
    """A campaign of one `work` benchmark `cpu` (crc32 at the small size, plus `benchmark`'s keys)
    in one local environment `native`."""
    keys = {"kernels": ["crc32"], "size": "small", **benchmark}
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())
    return (f'name = "{name}"\nrepetitions = {campaign_repetitions}\n\n[environments.native]\ntarget = "local"\n\n'
            f'[benchmarks.cpu]\nkind = "work"\n{lines}')


def run_report(r: subprocess.CompletedProcess) -> str:
    """The HTML report a finished `rtvbench run` wrote (the path its last line names): the same
    text `rtvbench report` would write, without a second process to make it."""
    [path] = [line[len("Report: "):] for line in r.stdout.splitlines() if line.startswith("Report: ")]
    return Path(path).read_text()


def start_cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    """The CLI in the background, in its own session so that signals reach only it."""
    return subprocess.Popen(cli_argv(*args), cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains marker."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            # Other processes' names and arguments need not be UTF-8 (a fuzz test's argv).
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = Path(f"/proc/{entry}/stat").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and stat[stat.rindex(")") + 2] != "Z":
            found.append(int(entry))
    return found


def kill_all(marker: str) -> None:
    """Clean up after a failed test: nothing it started may keep running."""
    for pid in processes_with(marker):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


def wait_for(predicate, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def busy_command(marker: str, log: Path) -> str:
    """A load command: busy_load.py with 2 children (see there)."""
    return f"{sys.executable} {BUSY_LOAD} {marker} {log} 2"


def waiting_benchmark(name: str, wait_while: str, tag: str = "") -> str:
    """TOML of a `command` benchmark `name` that polls the shell condition `wait_while` every 50 ms and
    ends once it is false (figure `waited` = 1). It holds a measurement, and so the run, until something
    the test controls has happened, however fast or slow the machine is. `tag` goes on its command
    line, to find its processes in /proc."""
    script = f"while {wait_while}; do sleep 0.05; done; echo waited: 1"
    command = f"sh -c {shlex.quote(script)}" + (f" {shlex.quote(tag)}" if tag else "")
    return (f"[benchmarks.{name}]\nkind = \"command\"\ncommand = {json.dumps(command)}\nformat = \"mapping\"\n"
            f"[[benchmarks.{name}.figures]]\nname = \"waited\"\nregex = \"waited: ([0-9]+)\"\n")


def load_running(command_part: str) -> str:
    """A shell condition, true while the local load whose command line matches `command_part` (an
    extended regular expression; a path is one) runs: while the runner's supervisor of it
    (rtvbench/targets/local_supervisor.py) has not ended. The runner reads the load's exit status from
    that supervisor right after the benchmark, so a benchmark that waits on this finds the load judged
    ended if it ended. An ended supervisor that is not reaped yet is a zombie, whose command line is
    empty: pgrep no longer finds it. "[l]" keeps the pattern from matching the waiting command's own line."""
    return f"pgrep -f {shlex.quote('[l]ocal_supervisor.py .*' + command_part)} >/dev/null"


def latency_campaign(name: str, command: str | None, *, repetitions: int = 3,
                     duration_s: float = 1, interval_us: int = 500, seed: int = 1) -> str:
    """1 environment, loads idle + `command` (the load "busy"; None: idle alone), a short latency
    benchmark on CPU 0."""
    busy = "" if command is None else f'''
[loads.busy]
command = "{command}"
# Time for the load's Python to start before the probe does: test_run_e2e checks that the load
# covered every busy measurement. A guess, not a guarantee: the runner cannot tell when a command
# load is up, and a busy machine can take longer. So only tests that run alone (not `functional`)
# may rely on it; the functional ones that use this load assert nothing about its timing.
settle_s = 0.6
'''
    return f'''
name = "{name}"
repetitions = {repetitions}
seed = {seed}

[environments.native]
target = "local"

[loads.idle]
{busy}
[benchmarks.wakeup]
kind = "latency"
interval_us = {interval_us}
duration_s = {duration_s}
policy = "other"
cpus = [0]
window_s = 0.5
thresholds_us = [100]
'''


def wakeup_campaign(name: str, environments: str, duration_s: float, reps: int) -> str:
    """`environments` (TOML tables) measured by a short latency benchmark at 1 ms on CPU 0."""
    return f'''
name = "{name}"
repetitions = {reps}
seed = 3
{environments}
[benchmarks.wakeup]
kind = "latency"
interval_us = 1000
duration_s = {duration_s}
policy = "other"
cpus = [0]
window_s = 0.25
thresholds_us = [100]
'''


def check_reads_only_small_regular_files(target, tmp_path: Path) -> None:
    """target.read_regular_file reads a regular file within the cap, says None for a missing one, and
    refuses a symbolic link to /dev/zero, a FIFO, a directory and a file over the cap in one sentence.
    The target must see this machine's tmp_path (local, or ssh to this machine)."""
    from rtvbench.errors import TargetError

    def refusal(path: Path, cap: int) -> str:
        try:
            target.read_regular_file(str(path), cap)
        except TargetError as e:
            return str(e)
        raise AssertionError(f"{path} was read")

    regular, link, fifo = tmp_path / "regular", tmp_path / "link", tmp_path / "fifo"
    regular.write_text("one\ntwo\n")
    link.symlink_to("/dev/zero")
    os.mkfifo(fifo)
    assert target.read_regular_file(str(regular), 100) == "one\ntwo\n"
    assert target.read_regular_file(str(tmp_path / "missing"), 100) is None
    for odd in (link, fifo, tmp_path):
        assert refusal(odd, 100) == (f"{odd} in environment {target.name} is not a regular file (a symbolic "
                                     "link, FIFO, device or directory), so it was not read.")
    assert refusal(regular, 4) == (f"{regular} in environment {target.name} holds more than the 4 bytes read "
                                   "at most, so it was not read.")


def install_wheel(wheel: Path, venv: Path, env: dict[str, str]) -> None:
    """A fresh venv without pip holding `wheel` alone (no dependency, no index)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                                "install", "--no-deps", "--no-index", str(wheel)], env=env,
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stderr
    assert "Deprecat" not in installed.stdout + installed.stderr
