"""Files rtvbench and the probe create where every user may write (/dev/shm, the temporary directory),
attacked the way another user of the machine would: a symlink planted at the name a region is about
to get, at a name learnt while the run is going, another user's file or a FIFO in its place. Nothing
outside rtvbench's own files is touched (a victim file keeps its content and mtime), and the result
is a safe new name or one clear error. Also: what a SIGKILLed run leaves (shm regions, rtvb-qemu-*,
rtvbench-pdf-* directories) is swept by the next command while a live run's is not, and stores and
reports are private unless RTVBENCH_UMASK says otherwise.
"""

from __future__ import annotations

import os
import random
import re
import secrets
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from host_helpers import cli_env, run_cli, work_campaign
from probe_records import records
from rtvbench import run_files
from rtvbench.errors import TargetError
from rtvbench.targets import shm

pytestmark = pytest.mark.functional

SHM = run_files.SHM_DIR
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def victim(tmp_path: Path):
    """A file of somebody else's that a planted symlink points at; the test checks it is untouched."""
    path = tmp_path / "victim"
    path.write_bytes(b"precious\n" * 1000)
    os.utime(path, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_size)
    yield path
    assert (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_size) == before


@pytest.fixture
def planted():
    """Symlinks the test plants in /dev/shm, removed afterwards."""
    links: list[Path] = []
    yield links
    for link in links:
        link.unlink(missing_ok=True)


def _tokens(monkeypatch, seed: int, first: list[str]) -> list[str]:
    """Make the random part of run file names `first`, then seeded random hex: the names are known."""
    rng = random.Random(seed)
    queue = list(first)
    handed: list[str] = []

    def token_hex(n: int) -> str:
        t = queue.pop(0) if queue else f"{rng.getrandbits(8 * n):0{2 * n}x}"
        handed.append(t)
        return t
    monkeypatch.setattr(secrets, "token_hex", token_hex)
    return handed


def test_a_region_name_with_a_planted_symlink_is_passed_over_for_a_new_one(monkeypatch, victim, planted):
    guessed = "0123456789abcdef"
    link = SHM / f"rtvb-{os.getpid()}-{guessed}-safe1"
    link.symlink_to(victim)
    planted.append(link)
    handed = _tokens(monkeypatch, 1, [guessed])
    path = shm.hold("safe1", 4 << 20)
    try:
        assert handed[0] == guessed and path.name == f"rtvb-{os.getpid()}-{handed[1]}-safe1"
        st = path.lstat()
        assert stat.S_ISREG(st.st_mode) and st.st_size == 4 << 20 and stat.S_IMODE(st.st_mode) == 0o600
        assert link.is_symlink() and os.readlink(link) == str(victim)
    finally:
        shm.release("safe1")
    assert not path.exists()


def test_a_region_whose_every_name_is_taken_is_one_clear_error(monkeypatch, victim, planted):
    names = [f"{i:016x}" for i in range(run_files._ATTEMPTS)]
    for t in names:
        link = SHM / f"rtvb-{os.getpid()}-{t}-safe2"
        link.symlink_to(victim)
        planted.append(link)
    _tokens(monkeypatch, 2, names)
    with pytest.raises(TargetError) as e:
        shm.hold("safe2", 1 << 20)
    assert str(e.value) == (f"cannot create the shm region file for region 'safe2' in {SHM} (File exists); "
                            "is /dev/shm a writable tmpfs?")
    assert "safe2" not in shm._held


def _probe_ipc(probe: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(probe), "ipc", "--transport", "shm", *args], capture_output=True, text=True,
                          timeout=timeout)


def _failure(proc: subprocess.CompletedProcess) -> str:
    """The probe's one failure text, in its end record."""
    end = records(proc.stdout)[-1]
    assert proc.returncode == 3 and end["type"] == "end" and end["status"] == "error", proc.stdout
    return end["error"]


@pytest.mark.parametrize("mode", [["--serve"], ["--connect", "shm"], []],
                         ids=["server", "client", "local"])
def test_the_probe_refuses_a_symlink_at_the_region_name(probe, victim, planted, mode):
    # The exact name the host hands the probe for a local measurement, with a link planted there
    # after the name became known (a user listing /dev/shm).
    link = shm.local_file("ipc-rtt-1")
    link.symlink_to(victim)
    planted.append(link)
    proc = _probe_ipc(probe, *mode, "--shm-path", str(link), "--timeout-s", "1", "--sizes", "16")
    assert _failure(proc) == (f"cannot map the shm region: refusing {link}: it is a symbolic link; name a "
                              "regular file of this user")
    assert link.is_symlink() and os.readlink(link) == str(victim)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_the_probe_refuses_another_users_region_file(probe, tmp_path):
    path = shm.local_file("foreign")
    try:
        path.write_bytes(b"\0" * (1 << 20))
        os.chown(path, 65534, 65534)
        before = path.read_bytes()
        proc = _probe_ipc(probe, "--connect", "shm", "--shm-path", str(path), "--timeout-s", "1", "--sizes", "16")
        assert _failure(proc) == (f"cannot map the shm region: refusing {path}: it belongs to another user; "
                                  f"name a regular file of this user (uid {os.geteuid()})")
        assert path.read_bytes() == before
    finally:
        path.unlink(missing_ok=True)


def test_the_probe_refuses_a_fifo_without_waiting_on_it(probe):
    path = shm.local_file("fifo")
    os.mkfifo(path, 0o600)
    try:
        proc = _probe_ipc(probe, "--serve", "--shm-path", str(path), "--timeout-s", "1")
        assert _failure(proc) == (f"cannot map the shm region: refusing {path}: it is not a regular file; "
                                  f"name a regular file of this user (uid {os.geteuid()})")
    finally:
        path.unlink(missing_ok=True)


def _shm_campaign() -> str:
    return ('name = "safe"\nrepetitions = 1\n[environments.native]\ntarget = "local"\n'
            '[environments.partner]\ntarget = "local"\n'
            '[benchmarks.rtt]\nkind = "ipc"\ntransports = ["shm"]\npeer = "partner"\nsizes = [16]\ncount = 50\n')


def test_a_run_whose_region_name_is_taken_while_it_runs_touches_nothing_else(tmp_path, monkeypatch, probe,
                                                                             victim, planted):
    # The runner's own path: the name of a measurement's region is learnt as soon as the runner picks
    # it, and a symlink planted there before the server probe creates the file.
    from rtvbench.cli import main
    from rtvbench.store import load_run, open_store
    chosen = shm.local_file

    def learnt(tail: str) -> Path:
        path = chosen(tail)
        path.symlink_to(victim)
        planted.append(path)
        return path
    monkeypatch.setattr(shm, "local_file", learnt)
    monkeypatch.setenv("RTVBENCH_PROBE", str(probe))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(_shm_campaign())
    with pytest.raises(SystemExit):
        main(["run", "c.toml", "--store", "sqlite:///s.db"])
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    assert len(planted) == len(run.measurements) == 2
    for m, link in zip(run.measurements, planted):
        assert m.status != "ok"
        assert f"cannot map the shm region: refusing {link}: it is a symbolic link" in m.error
    for link in planted:
        assert link.is_symlink() and os.readlink(link) == str(victim)


# ------------------------------------------------------------------ leftovers of killed runs

_HOLDER = """
import sys, time
from rtvbench import run_files
from rtvbench.targets import shm
print(shm.hold("left", 1 << 20), run_files.make_dir("rtvb-qemu-"), run_files.make_dir("rtvbench-pdf-"), flush=True)
time.sleep(600)
"""


def _holder(victim: Path) -> tuple[subprocess.Popen, list[Path]]:
    """A process that made a region and the two directories the way a run does; inside each directory
    a file and a symlink to the victim, which removing the directory must not follow."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER], stdout=subprocess.PIPE, text=True,
                            env=cli_env(), cwd=REPO)
    paths = [Path(p) for p in proc.stdout.readline().split()]
    assert len(paths) == 3, paths
    for d in paths[1:]:
        (d / "qemu.log").write_text("log")
        (d / "outside").symlink_to(victim)
    return proc, paths


def test_a_killed_runs_region_and_directories_go_at_the_next_start_a_live_ones_stay(tmp_path, victim):
    live, live_paths = _holder(victim)
    dead, dead_paths = _holder(victim)
    try:
        dead.send_signal(signal.SIGKILL)
        dead.wait(30)
        assert all(p.exists() for p in dead_paths)          # SIGKILL: nothing was cleaned up
        for brief in (["--version"], ["list"], ["validate", "none.toml"]):   # they make no such file: left
            run_cli(*brief, cwd=tmp_path, env=cli_env())
            assert all(p.exists() for p in dead_paths)
        r = run_cli("report", cwd=tmp_path, env=cli_env())       # any other command sweeps, even one refused
        assert r.returncode == 2 and "holds no runs" in r.stderr, r.stderr
        assert not any(os.path.lexists(p) for p in dead_paths)
        assert all(p.exists() for p in live_paths)           # its process still runs: untouched
        assert (live_paths[1] / "qemu.log").read_text() == "log"
        assert re.fullmatch(rf"rtvb-{live.pid}-[0-9a-f]{{16}}-left", live_paths[0].name)
        assert [re.fullmatch(rf"{pre}{live.pid}-\w+", p.name) is not None
                for pre, p in zip(("rtvb-qemu-", "rtvbench-pdf-"), live_paths[1:])] == [True, True]
    finally:
        live.kill()
        live.wait(30)
        run_files.sweep()
    assert not any(os.path.lexists(p) for p in live_paths)


def test_the_sweep_leaves_what_is_not_a_dead_runs_own(tmp_path, victim, planted):
    gone = subprocess.Popen(["true"])
    gone.wait()
    link = SHM / f"rtvb-{gone.pid}-{'ab' * 8}-x"       # a dead pid's name, but a symlink: not ours
    link.symlink_to(victim)
    planted.append(link)
    other = tmp_path / f"rtvb-qemu-{gone.pid}-file"     # a file where a directory would be
    other.write_text("x")
    removed = run_files.sweep(temp_dir=tmp_path)
    assert link not in removed and link.is_symlink() and other.exists()


# ------------------------------------------------------------------ files on a target

def test_a_commands_output_file_is_in_a_private_directory_removed_afterwards(tmp_path, probe):
    # The tool reports its output directory's mode and owner as its failure, which the run stores.
    (tmp_path / "c.toml").write_text(
        'name = "out"\nrepetitions = 1\n[environments.native]\ntarget = "local"\n[benchmarks.t]\nkind = "command"\n'
        'command = "sh -c \'stat -c %a:%u \\"$(dirname {output})\\" >&2; exit 1\'"\nformat = "hyperfine-json"\n')
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 3, r.stderr
    from rtvbench.store import load_run, open_store
    [m] = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1).measurements
    assert m.error == f"the command exited with status 1: 700:{os.geteuid()}", m.error
    output = re.search(r"/tmp/rtvbench-output-\w{10}/output", m.command[-1])
    assert output is not None, m.command
    assert not Path(output.group()).parent.exists()


def test_no_private_directory_on_the_target_is_one_clear_error():
    from rtvbench.runner.run import _private_dir
    from rtvbench.targets import Completed

    class NoTmp:
        name = "board"

        def run(self, argv, on_line):
            assert argv[:2] == ["mktemp", "-d"]
            return Completed(1, "mktemp: (null): Read-only file system")
    with pytest.raises(TargetError) as e:
        _private_dir(NoTmp())
    assert str(e.value) == ("cannot make a directory for the command's output file in /tmp of environment board "
                            "(mktemp -d: mktemp: (null): Read-only file system); check that /tmp there is writable.")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    from helpers.sshd import Sshd
    server = Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.mark.parametrize("taken_by", ["symlink", "another user"])
def test_a_probe_directory_whose_name_was_taken_after_a_reboot_is_refused(tmp_path_factory, sshd, probe, taken_by):
    # A reboot empties the board's /tmp; the probe's directory is made anew under its old name,
    # which any user of the board could read in the runner's commands and take first.
    from rtvbench.targets.ssh.deploy import copy_probe
    from test_ssh_target import make_target
    if taken_by == "another user" and os.geteuid() != 0:
        pytest.skip("giving a directory to another user needs root")
    t = make_target(sshd.root)
    try:
        dest = Path(t.deploy_probe())
        for f in dest.parent.iterdir():
            f.unlink()
        dest.parent.rmdir()                                 # the reboot
        elsewhere = tmp_path_factory.mktemp("elsewhere")
        if taken_by == "symlink":
            dest.parent.symlink_to(elsewhere)
        else:
            dest.parent.mkdir()
            os.chown(dest.parent, 65534, 65534)
        with pytest.raises(TargetError) as e:
            copy_probe(t.connection, probe, str(dest))
        assert str(e.value) == (f"the probe's directory {dest.parent} in environment board ({t.params.host}) is a "
                                "symlink or not this user's (somebody else made it); remove it there, or set "
                                "`workdir` to a directory only this user may write.")
        assert list(elsewhere.iterdir()) == [] and not dest.exists()
        if dest.parent.is_symlink():
            dest.parent.unlink()
        else:
            dest.parent.rmdir()
        copy_probe(t.connection, probe, str(dest))          # the name is free again: made 0700
        assert stat.S_IMODE(dest.parent.lstat().st_mode) == 0o700 and dest.is_file()
    finally:
        t.close()


# ------------------------------------------------------------------ stores and reports

def _modes(tmp_path: Path, env: dict[str, str]) -> dict[str, int]:
    (tmp_path / "c.toml").write_text(work_campaign("modes", 1))
    r = run_cli("run", "c.toml", "--store", "sqlite:///team/s.db", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    report = tmp_path / "out" / "r.json"
    r = run_cli("report", "--store", "sqlite:///team/s.db", "--format", "json", "-o", str(report),
                cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    paths = {"store dir": tmp_path / "team", "store": tmp_path / "team" / "s.db", "report dir": report.parent,
             "report": report, "html report": next((tmp_path / "rtvbench-results").glob("*.html"))}
    return {name: stat.S_IMODE(p.stat().st_mode) for name, p in paths.items()}


def test_new_stores_and_reports_are_private_by_default(tmp_path, probe):
    env = cli_env(probe)
    env.pop("RTVBENCH_UMASK", None)
    assert _modes(tmp_path, env) == {"store dir": 0o700, "store": 0o600, "report dir": 0o700, "report": 0o600,
                                     "html report": 0o600}


def test_rtvbench_umask_makes_them_group_readable(tmp_path, probe):
    modes = _modes(tmp_path, cli_env(probe, RTVBENCH_UMASK="027"))
    assert modes == {"store dir": 0o750, "store": 0o640, "report dir": 0o750, "report": 0o640,
                     "html report": 0o640}


def test_an_existing_store_and_report_keep_their_permissions(tmp_path, probe):
    (tmp_path / "team").mkdir(mode=0o755)
    os.chmod(tmp_path / "team", 0o755)
    (tmp_path / "out").mkdir()
    os.chmod(tmp_path / "out", 0o755)
    for f in (tmp_path / "team" / "s.db", tmp_path / "out" / "r.json"):
        f.touch()
        os.chmod(f, 0o644)
    modes = _modes(tmp_path, cli_env(probe))
    assert {k: v for k, v in modes.items() if k != "html report"} == {
        "store dir": 0o755, "store": 0o644, "report dir": 0o755, "report": 0o644}


@pytest.mark.parametrize("value", ["group", "0999", "1234"])
def test_a_malformed_rtvbench_umask_is_one_clear_input_error(tmp_path, value):
    r = run_cli("list", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(RTVBENCH_UMASK=value))
    assert r.returncode == 2
    assert r.stderr.strip() == (f"rtvbench: RTVBENCH_UMASK={value!r} is not an octal umask; set it to e.g. 027 (the "
                                "group may read) or unset it (only the owner may read, the default).")
    assert not (tmp_path / "s.db").exists()
