"""The ssh target against a real OpenSSH server on 127.0.0.1 (tests/helpers/sshd.py): the probe
is deployed and run through it with streaming, arguments are never interpreted by a shell, host
keys are verified, Ctrl-C reaches the remote probe, loads and dropped connections leave nothing
running there. The "remote" machine is this one, so what runs there can be checked in /proc."""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from helpers.sshd import ALIAS, Sshd
from host_helpers import kill_all, processes_with, wait_for
from rtvbench.campaign.reader import CampaignError, parse_campaign
from rtvbench.errors import TargetError, TargetLost
from rtvbench.probe.stream import ProbeStream
from rtvbench.procstat import parse_proc_stat
from rtvbench.targets import TARGETS
from rtvbench.probe.binary import probe_for_arch
from rtvbench.targets.ssh import session as ssh_session
from rtvbench.targets.ssh import STOP_GRACE_S, SshBackground, SshParams, SshTarget, _alive
from rtvbench.targets.ssh.wrapper import SCRIPT, remote_command, split_exit

LATENCY = ["latency", "--interval-us", "1000", "--policy", "other", "--cpus", "0", "--window-s", "0.5"]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


def probes_running(path: str) -> list[int]:
    """The deployed probe's processes (not the ssh client or the wrapper, whose command lines
    also name it)."""
    running = []
    for pid in processes_with(path):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "rtvb-probe":
                running.append(pid)
        except OSError:
            pass
    return running


def make_target(base_dir: Path, **keys) -> SshTarget:
    params = SshParams.model_validate({"host": ALIAS, "ssh_config": "ssh_config", **keys},
                                      context={"base_dir": base_dir})
    return SshTarget("board", params)


@pytest.fixture
def target(sshd):
    t = make_target(sshd.root)
    yield t
    master, remote_dir = t.connection.master_pid(), t.probe_copy.directory
    t.close()
    # close() asks the master to exit and, if it has not within a second, kills it; a killed
    # process may take a moment to be gone on a busy machine (a hang guard, not a time limit).
    if master is not None:
        wait_for(lambda: not _alive(master), 30, "close() to end the master connection")
    assert remote_dir is None or not Path(remote_dir).exists(), "close() left the probe there"


def _campaign(env: str) -> str:
    return f'name = "c"\n[environments.board]\ntarget = "ssh"\n{env}\n[benchmarks.b]\nkind = "latency"\nduration_s = 1\n'


# -- campaign keys --------------------------------------------------------------------------


def test_campaign_keys_are_validated(tmp_path):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "ssh_config").write_text("Host board\n  User root\n")
    ok = parse_campaign(_campaign('host = "board"\nport = 2222\nssh_config = "cfg/ssh_config"\n'
                                  'options = ["ConnectTimeout=5", "StrictHostKeyChecking=no"]\n'
                                  'workdir = "/var/tmp"'), "c.toml", tmp_path)
    params = ok.environments["board"].params
    # A relative ssh_config is taken from the campaign file's directory, not the working one.
    assert params.ssh_config == str(tmp_path / "cfg" / "ssh_config")
    assert (params.port, params.workdir) == (2222, "/var/tmp")
    # Turning host key checking off is allowed when the user writes it: it is their choice.
    assert params.options == ["ConnectTimeout=5", "StrictHostKeyChecking=no"]
    assert isinstance(ok.environments["board"], TARGETS.get("ssh"))

    bad = {
        "": "environments.board.host: is required",
        'host = "board"\nport = 0': "environments.board.port: must be a TCP port number from 1 to 65535",
        'host = "board"\nport = "22"': "environments.board.port: input should be a valid integer",
        'host = "-oProxyCommand=x"': "environments.board.host: must be a destination as ssh takes it",
        'host = "a b"': "environments.board.host: must be a destination as ssh takes it",
        'host = "board"\nssh_config = "nope"': f"no such file: {tmp_path / 'nope'} (a relative path is "
                                               "taken from the campaign file's directory)",
        'host = "board"\noptions = "ConnectTimeout=5"': "environments.board.options: must be a list",
        'host = "board"\noptions = ["-o ConnectTimeout=5"]': 'each option must be "Key=Value"',
        'host = "board"\noptions = ["BatchMode=no"]': '"BatchMode=no": rtvbench sets BatchMode itself',
        'host = "board"\noptions = ["ControlPath=/tmp/x"]': "rtvbench sets ControlPath itself",
        'host = "board"\noptions = ["StrictHostKeyChecking=maybe"]': "StrictHostKeyChecking must be one of",
        'host = "board"\nworkdir = "tmp"': 'environments.board.workdir: must be an absolute directory',
        'host = "board"\nuser = "root"': "environments.board.user: unknown key",
    }
    for keys, message in bad.items():
        with pytest.raises(CampaignError) as e:
            parse_campaign(_campaign(keys), "c.toml", tmp_path)
        assert message in str(e.value), (keys, str(e.value))


@pytest.mark.functional
def test_the_probe_build_follows_the_remote_architecture(cross_probes, probe, tmp_path, monkeypatch):
    monkeypatch.delenv("RTVBENCH_PROBE", raising=False)
    for arch, build in (("aarch64", "aarch64"), ("arm64", "aarch64"), ("armv7l", "armhf"),
                        ("armv8l", "armhf"), ("riscv64", "riscv64")):
        if platform.machine() != arch:
            assert probe_for_arch(arch) == cross_probes[build], arch
    assert probe_for_arch(platform.machine()).resolve() == probe.resolve()
    for arch in ("mips", "armv6l", "i686"):
        with pytest.raises(TargetError, match=f"no probe build for the target's architecture '{arch}'"):
            probe_for_arch(arch)
    # A missing cross build names the command that makes it.
    monkeypatch.setattr("rtvbench.probe.binary.BUILD_DIR", tmp_path)
    with pytest.raises(TargetError, match=r"no probe built for riscv64 .* run `make probe-cross`"):
        probe_for_arch("riscv64")
    # An explicit binary per architecture wins.
    monkeypatch.setenv("RTVBENCH_PROBE_RISCV64", str(cross_probes["riscv64"]))
    assert probe_for_arch("riscv64") == cross_probes["riscv64"]


# -- the wrapper, without ssh ----------------------------------------------------------------


def _busybox_bin(tmp_path: Path) -> Path:
    """A PATH of busybox applets only, like a minimal board's."""
    busybox = shutil.which("busybox")
    if busybox is None:
        pytest.skip("busybox is not installed (apt-get install busybox)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for applet in ("sh", "setsid", "sleep", "kill", "echo", "cat"):
        (bin_dir / applet).symlink_to(busybox)
    return bin_dir


def _shell(shell: str, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """(the sh to run the wrapper with, its environment): dash, or busybox applets alone on PATH."""
    env = dict(os.environ)
    if shell == "busybox":
        env["PATH"] = str(_busybox_bin(tmp_path))
        return "sh", env
    return shutil.which("dash") or pytest.skip("dash is not installed"), env


@pytest.mark.parametrize("shell", ["dash", "busybox"])
@pytest.mark.functional
def test_the_wrapper_forwards_signals_and_kills_the_group_when_the_host_goes(shell, tmp_path, probe):
    sh, env = _shell(shell, tmp_path)
    marker = f"rtvb-wrap-{uuid.uuid4().hex}"
    try:
        # SIGINT reaches the probe: it prints its results and `end`, the status comes back.
        wrapped = subprocess.Popen([sh, "-c", SCRIPT, "wrap", "2", str(probe), *LATENCY, "--duration-s", "30"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=env, start_new_session=True)
        first = json.loads(wrapped.stdout.readline())
        assert first["type"] == "meta"
        wrapped.stdin.write(b"INT\n")
        wrapped.stdin.flush()
        out, err = wrapped.communicate(timeout=60)          # a hang guard
        last = json.loads(out.splitlines()[-1])
        assert (last["type"], last["status"]) == ("end", "interrupted")
        assert split_exit(err.decode())[0] == 0 and wrapped.returncode == 0

        # End of file on stdin: the whole group goes, also a child that ignores SIGTERM (after
        # the grace period) and one that left the command's process.
        script = ("trap '' TERM; (trap '' TERM; while :; do sleep 1; done) & (while :; do sleep 1; done) & "
                  "echo started; wait")
        wrapped = subprocess.Popen([sh, "-c", SCRIPT, "wrap", "2", sh, "-c", script, marker],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=env, start_new_session=True)
        assert wrapped.stdout.readline() == b"started\n"
        # The wrapper, the command and its two children.
        assert len(processes_with(marker)) >= 4
        started = time.monotonic()
        wrapped.stdin.close()
        wrapped.wait(60)                                      # a hang guard
        # TERM, then KILL only after the grace (2 s here): the wrapper cannot be quicker than that.
        # How much longer it took depends on the machine's load, so only a hang guard bounds it.
        assert time.monotonic() - started >= 1.5
        assert split_exit(wrapped.stderr.read().decode())[0] == 128 + signal.SIGKILL
        # The wrapper exits right after sending SIGKILL to the group: its members are gone as soon as
        # they are scheduled once more.
        wait_for(lambda: processes_with(marker) == [], 30, "the command's whole group to end")
    finally:
        kill_all(marker)


@pytest.mark.parametrize("shell", ["dash", "busybox"])
def test_end_of_file_before_the_command_started_still_stops_it(shell, tmp_path):
    """The host may be gone before the command is even running (stdin at end of file from the start):
    the wrapper's stop must not miss a command whose process group does not exist yet."""
    sh, env = _shell(shell, tmp_path)
    marker = f"rtvb-race-{uuid.uuid4().hex}"
    try:
        procs = [subprocess.Popen([sh, "-c", SCRIPT, "wrap", "1", sh, "-c", "while :; do sleep 1; done", marker],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env=env, start_new_session=True) for _ in range(40)]
        for p in procs:
            p.wait(20)
        time.sleep(0.5)
        assert processes_with(marker) == []
    finally:
        kill_all(marker)


def test_exit_status_is_read_from_the_wrappers_last_line():
    assert split_exit("warning: x\n\n@rtvb-exit=3\n") == (3, "warning: x")
    assert split_exit("Connection closed by remote host\r\n") == (None, "Connection closed by remote host")
    # The command's own stderr cannot fake it in the middle: the last mark counts.
    assert split_exit("@rtvb-exit=0\nmore\n\n@rtvb-exit=255\n") == (255, "@rtvb-exit=0\nmore")
    with pytest.raises(ValueError):
        remote_command(["a\0b"], 2)


# -- through a real sshd --------------------------------------------------------------------


@pytest.mark.functional
def test_deploy_run_stream_and_close(target, sshd, probe):
    assert target.describe() == {"target": "ssh", "host": ALIAS, "arch": platform.machine(),
                                 "hostname": socket.gethostname()}
    path = target.deploy_probe()
    assert Path(path).parent.name.startswith("rtvb.") and Path(path).parent.parent == Path("/tmp")
    assert Path(path).read_bytes() == probe.read_bytes() and os.access(path, os.X_OK)
    assert target.deploy_probe() == path                       # once per target

    stream, records = ProbeStream("ssh"), []
    done = target.run([path, *LATENCY, "--duration-s", "2"], lambda line: records.append(stream.feed(line)))
    assert (done.returncode, done.interrupted) == (0, False) and done.stderr == ""
    assert records[-1]["type"] == "end" and records[-1]["status"] == "ok"
    merged = next(rec for rec in records if rec["type"] == "result" and rec["cpu"] == "all")
    assert abs(merged["count"] + merged["missed"] - 2000) <= 40          # 2 s at 1 ms

    # Lines are handed over as the probe prints them, not when it ends: the first window arrives
    # while the probe still runs. It would run for 10 minutes; once that window is in, the test
    # stops it with SIGINT (the board is this machine), so that nothing depends on timing.
    stream, records, running = ProbeStream("ssh"), [], []

    def on_line(line: str) -> None:
        records.append(stream.feed(line))
        if records[-1]["type"] == "window" and not running:
            running.extend(probes_running(path))
            for pid in running:
                os.kill(pid, signal.SIGINT)
    done = target.run([path, *LATENCY, "--duration-s", "600"], on_line)
    assert len(running) == 1, "the probe was no longer running when its first window arrived"
    assert (done.returncode, done.interrupted) == (0, False) and done.stderr == ""
    assert records[-1]["type"] == "end" and records[-1]["status"] == "interrupted"

    lines: list[str] = []
    assert target.run([path, "sysinfo"], lines.append).returncode == 0
    sysinfo = [json.loads(x) for x in lines if json.loads(x)["type"] == "sysinfo"]
    assert len(sysinfo) == 1 and sysinfo[0]["hostname"] == socket.gethostname()

    # A command's own status and stderr, 255 included, are not a lost connection.
    done = target.run(["sh", "-c", "echo out; echo 'to stderr' >&2; exit 255"], lines.append)
    assert (done.returncode, done.stderr, lines[-1]) == (255, "to stderr", "out")
    assert target.run(["rtvb-no-such-program"], lines.append).returncode == 127

    stat = parse_proc_stat(target.read_file("/proc/stat"))
    assert "cpu0" in stat and stat["cpu"]["user"] > 0
    with pytest.raises(TargetError, match="cannot read /nonexistent in environment board"):
        target.read_file("/nonexistent")

    # Every command went over one shared connection.
    assert len(sshd.connection_processes()) == 1
    master = target.connection.master_pid()
    assert master is not None
    target.close()
    assert not Path(path).parent.exists()
    # Hang guards: a killed master, and the server's side of its connection, end asynchronously.
    wait_for(lambda: not _alive(master), 30, "the master connection to end")
    wait_for(lambda: sshd.connection_processes() == [], 60, "the server side of the connection to end")
    target.close()                                              # idempotent


HOSTILE = ["two words", "it's", '"double"', "$(touch {d}/dollar)", "`touch {d}/backtick`",
           "; touch {d}/semicolon", "x\ntouch {d}/newline", "&& touch {d}/and", "| touch {d}/pipe",
           "> {d}/redirect", "'; touch {d}/quote; '", "$HOME", "*", "", "\\", "-n", "\t", "~"]


@pytest.mark.functional
def test_a_killed_runners_probe_copy_and_connection_are_removed_by_the_next_runner(target, sshd):
    """SIGKILL leaves a runner no time to clean up: the next runner of this machine removes the dead
    one's probe copy on the target, tells its lingering master connection to exit and removes its
    control directory — and leaves a live runner's alone."""
    code = (f"import os, signal, sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
            "from pathlib import Path\nfrom test_ssh_target import make_target\n"
            f"t = make_target(Path({str(sshd.root)!r}))\n"
            "print(t.deploy_probe(), t.connection.control_dir, t.connection.master_pid(), flush=True)\n"
            "if sys.argv[1] == 'kill':\n    os.kill(os.getpid(), signal.SIGKILL)\n"
            "sys.stdin.read()\nt.close()\n")
    live = subprocess.Popen([sys.executable, "-c", code, "live"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        live_probe, live_control, _ = live.stdout.readline().split()
        killed = subprocess.run([sys.executable, "-c", code, "kill"], capture_output=True, text=True, timeout=120)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        path, control, master = killed.stdout.split()
        assert Path(path).exists() and Path(control).is_dir() and _alive(int(master))

        target.deploy_probe()
        assert not Path(path).parent.exists(), "the dead runner's probe copy is still there"
        assert not Path(control).exists(), "the dead runner's control directory is still there"
        wait_for(lambda: not _alive(int(master)), 60, "the dead runner's master connection to exit")
        assert Path(live_probe).exists() and Path(live_control).is_dir()
    finally:
        live.communicate("", timeout=120)
    assert not Path(live_probe).parent.exists()


@pytest.mark.functional
def test_arguments_reach_the_command_verbatim(target, tmp_path, monkeypatch):
    # How long stop() waits for the output reader: a hang guard, generous for a busy machine.
    monkeypatch.setattr(SshBackground, "READER_JOIN_S", 60.0)
    witness = tmp_path / "witness"
    witness.mkdir()
    args = [a.format(d=witness) for a in HOSTILE]
    out: list[str] = []
    done = target.run(["printf", "[%s]\\n", *args], out.append)
    assert done.returncode == 0, done.stderr
    assert "\n".join(out) == "\n".join(f"[{a}]" for a in args)
    # The same words in the background, and in a working directory whose name is hostile too.
    out.clear()
    bg = target.start_background(["printf", "[%s]\\n", *args], out.append)
    wait_for(lambda: bg.poll() is not None, 60, "the background printf to end")
    bg.stop()
    assert "\n".join(out) == "\n".join(f"[{a}]" for a in args)
    workdir = tmp_path / "work dir 'q' $(touch w) ;x"
    workdir.mkdir()
    path = make_target(Path(target.params.ssh_config).parent, workdir=str(workdir))
    try:
        deployed = path.deploy_probe()
        assert Path(deployed).parent.parent == workdir
        lines: list[str] = []
        assert path.run([deployed, "--version"], lines.append).returncode == 0
        assert lines[0].startswith("rtvb-probe ")
    finally:
        path.close()
    assert list(witness.iterdir()) == [] and not (Path.home() / "w").exists()
    assert list(workdir.iterdir()) == []                      # close() removed its directory


@pytest.mark.functional
def test_deploy_failures_name_the_workdir(sshd, tmp_path, monkeypatch):
    t = make_target(sshd.root, workdir="/proc")
    try:
        with pytest.raises(TargetError, match=r"cannot create a directory in /proc in environment board "
                                              r"\(rtvb-test\): .*; set `workdir` to a writable directory"):
            t.deploy_probe()
    finally:
        t.close()
    broken = tmp_path / "rtvb-probe"
    broken.write_text("#!/bin/sh\necho 'cannot execute binary file' >&2\nexit 126\n")
    broken.chmod(0o755)
    monkeypatch.setenv("RTVBENCH_PROBE", str(broken))
    t = make_target(sshd.root)
    try:
        with pytest.raises(TargetError, match=r"the probe copied to /tmp/rtvb\.[\w.]+/rtvb-probe does not run "
                                              r"in environment board \(rtvb-test\) \(cannot execute binary "
                                              r"file\); if /tmp is mounted noexec, set `workdir`"):
            t.deploy_probe()
    finally:
        t.close()


def _target_with_known_hosts(sshd, tmp_path, known_hosts: str, **keys) -> tuple[SshTarget, Path]:
    kh = tmp_path / "known_hosts"
    kh.write_text(known_hosts)
    sshd.write_client_config(tmp_path / "ssh_config", known_hosts=kh)
    return make_target(tmp_path, **keys), kh


@pytest.mark.functional
def test_an_unknown_host_key_is_a_clear_error_without_prompting(sshd, tmp_path):
    t, kh = _target_with_known_hosts(sshd, tmp_path, "")
    started = time.monotonic()
    with pytest.raises(TargetError) as e:
        t.deploy_probe()
    # At once, not after retrying to connect until the connect timeout (CONNECT_TIMEOUT_S + 60 s =
    # 75 s): the bound leaves a busy machine room and still tells the two apart.
    assert time.monotonic() - started < 60
    assert not isinstance(e.value, TargetLost)
    message = str(e.value)
    assert message.startswith(f"the host key of environment board ({ALIAS}) is not known")
    assert f"connect once by hand with `ssh -F {tmp_path / 'ssh_config'} {ALIAS}`" in message
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1 >> {kh}` (check it!)" in message
    assert kh.read_text() == ""                                 # nothing accepted behind the user's back
    t.close()

    # The user's own choice is honoured: accept-new records the key on first use.
    t, kh = _target_with_known_hosts(sshd, tmp_path, "", options=["StrictHostKeyChecking=accept-new"])
    try:
        assert t.describe()["hostname"] == socket.gethostname()
        assert Path(f"{sshd.host_key}.pub").read_text().split()[1] in kh.read_text()
    finally:
        t.close()


@pytest.mark.functional
def test_a_changed_host_key_or_a_refused_key_is_a_clear_error(sshd, tmp_path):
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    impostor = " ".join(Path(f"{other}.pub").read_text().split()[:2])
    t, kh = _target_with_known_hosts(sshd, tmp_path, f"[127.0.0.1]:{sshd.port} {impostor}\n")
    with pytest.raises(TargetError) as e:
        t.describe()
    assert f"the host key of environment board ({ALIAS}) has CHANGED" in str(e.value)
    # Quoted (the brackets are a shell glob) and with the known_hosts file ssh reads here.
    assert f"ssh-keygen -R '[127.0.0.1]:{sshd.port}' -f {kh}`" in str(e.value)
    t.close()

    config = sshd.write_client_config(tmp_path / "ssh_config")
    config.write_text(config.read_text().replace(str(sshd.client_key), str(other)))
    t = make_target(tmp_path)
    with pytest.raises(TargetError, match=rf"ssh cannot log in to environment board \({ALIAS}\): no key "
                                          "was accepted, and rtvbench never asks for a password"):
        t.describe()
    t.close()


def test_ctrl_c_reaches_the_remote_probe_which_prints_its_results(target):
    path = target.deploy_probe()
    records: list[dict] = []

    def on_line(line: str) -> None:
        records.append(json.loads(line))
        if records[-1]["type"] == "window" and sum(r["type"] == "window" for r in records) == 1:
            # The user's Ctrl-C: SIGINT to rtvbench itself (ssh runs in a session of its own).
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()

    started = time.monotonic()
    done = target.run([path, *LATENCY, "--duration-s", "60"], on_line)
    assert done.interrupted and done.returncode == 0, done
    assert time.monotonic() - started < 20
    end = records[-1]
    assert (end["type"], end["status"]) == ("end", "interrupted")
    assert 0.5e9 <= end["elapsed_ns"] < 15e9
    merged = next(r for r in records if r["type"] == "result" and r["cpu"] == "all")
    assert merged["count"] >= 300                               # >= 0.5 s at 1 ms
    wait_for(lambda: processes_with(path) == [], 10, "the remote probe to end")


@pytest.mark.functional
def test_a_background_load_stops_with_its_last_lines_and_leaves_nothing(target, sshd, monkeypatch):
    # How long stop() waits for the output reader: a hang guard, generous for a busy machine.
    monkeypatch.setattr(SshBackground, "READER_JOIN_S", 60.0)
    path = target.deploy_probe()
    records: list[dict] = []
    first = threading.Event()
    bg = target.start_background([path, "load", "--kind", "cpu", "--percent", "20", "--window-s", "0.5"],
                                 lambda line: (records.append(json.loads(line)), first.set()))
    assert first.wait(60)                                       # a hang guard
    assert bg.poll() is None and probes_running(path)
    with monkeypatch.context() as m:
        # stop() waits STOP_GRACE_S + 1 s for a load told to stop before it kills it; a load that
        # stops on SIGTERM, as this one does, may take longer than that to say so on a busy machine.
        m.setattr(ssh_session, "STOP_GRACE_S", 60)
        bg.stop()
    assert [r["type"] for r in records][0] == "meta"
    assert records[-1]["type"] == "end" and records[-1]["status"] == "interrupted"
    assert any(r["type"] == "result" for r in records)
    assert bg.poll() == 0 and bg.failure() is None
    wait_for(lambda: processes_with(path) == [], 60, "the remote load to end")
    bg.stop()                                                   # idempotent

    # A command that ignores SIGTERM, with children: SIGKILL after the grace period, the whole group.
    marker = f"rtvb-ssh-load-{uuid.uuid4().hex}"
    script = ("trap '' TERM; (trap '' TERM; while :; do sleep 1; done) & (while :; do sleep 1; done) & "
              "echo started; wait")
    try:
        bg = target.start_background(["sh", "-c", script, marker])
        wait_for(lambda: bg.output_tail() == "started", 60, "the load to start its children")
        assert bg.poll() is None
        started = time.monotonic()
        bg.stop()
        # SIGKILL only after the grace: never sooner. How much later depends on the machine's load
        # (the status below says that SIGKILL came), so no upper bound but the hang guards.
        assert time.monotonic() - started >= STOP_GRACE_S
        wait_for(lambda: processes_with(marker) == [], 60, "every process of the load to end")
        assert bg.output_tail() == "started"
        assert bg.poll() == 128 + signal.SIGKILL
    finally:
        kill_all(marker)

    # A load that ends by itself says so, with its output.
    bg = target.start_background(["sh", "-c", "echo 'no such device' >&2; exit 3"])
    wait_for(lambda: bg.poll() is not None, 60, "the load to end")
    assert (bg.poll(), bg.output_tail()) == (3, "no such device")
    bg.stop()


@pytest.mark.functional
def test_a_dropped_connection_is_target_lost_and_the_probe_does_not_survive(target, sshd):
    path = target.deploy_probe()
    dropped: list[int] = []

    def on_line(line: str) -> None:
        if not dropped:
            dropped.append(sshd.drop_connections())             # the host "crashes" mid-run

    started = time.monotonic()
    with pytest.raises(TargetLost) as e:
        target.run([path, *LATENCY, "--duration-s", "600"], on_line)
    # Noticed when the connection went, not when the probe would have ended (600 s): the bound is
    # far from both a busy machine's delay and the probe's duration.
    assert time.monotonic() - started < 120
    assert dropped[0] >= 1
    assert f"the connection to environment board ({ALIAS}) was lost while `{path} latency` ran" in str(e.value)
    assert e.value.log.startswith("ssh exited with status 255")
    # The wrapper saw the end of its input: TERM, then KILL after the grace period at most.
    wait_for(lambda: processes_with(path) == [], 60, "the orphaned remote probe to end")

    # The next command re-establishes the connection.
    lines: list[str] = []
    assert target.run([path, "--version"], lines.append).returncode == 0
    assert lines[0].startswith("rtvb-probe ") and target.connection.master_pid() is not None
    assert target.deploy_probe() == path                       # still there: not copied again
    master = target.connection.master_pid()
    os.kill(master, signal.SIGKILL)                             # our master dies, its socket stays
    # Dead, not dying: until then it still answers on its socket (SIGKILL takes effect when the
    # process is next scheduled, which on a busy machine may be a while).
    wait_for(lambda: not _alive(master), 30, "the killed master to be gone")
    assert target.run([path, "--version"], lines.append).returncode == 0
    assert target.connection.master_pid() is not None          # shared again, not one-off connections
    shutil.rmtree(Path(path).parent)                            # the target restarted, /tmp is empty
    path = target.deploy_probe()
    assert os.access(path, os.X_OK)

    # A background load loses its connection the same way: it ends, and says why.
    bg = target.start_background([path, "load", "--kind", "cpu", "--percent", "10"])
    wait_for(lambda: probes_running(path), 60, "the load to start")
    sshd.drop_connections()
    wait_for(lambda: bg.poll() is not None, 60, "ssh to notice the drop")
    assert bg.poll() == 255 and "(the connection to rtvb-test was lost)" in bg.output_tail()
    wait_for(lambda: processes_with(path) == [], 60, "the orphaned remote load to end")
    bg.stop()
