"""End-to-end tests of `rtvb-probe agent`, the command server a guest's init runs (docs/probe/init.md).

The agent is started with one end of a socketpair as its channel; the test speaks the protocol on the
other end, as the qemu target does over the virtio port. Ground truths are outside the agent: the
exit statuses the kernel reports for known commands, the process table for killed and orphaned
processes, the host's own CLOCK_BOOTTIME for `ready` and `tick`, the bytes of known files.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

from helpers.proc_state import poll_nfds
from host_helpers import wait_for
from probe_records import of_type, records

REPO = Path(__file__).resolve().parent.parent


def hexarg(arg: str | bytes) -> str:
    data = arg.encode() if isinstance(arg, str) else arg
    return data.hex() if data else "-"


def pid_gone(pid: int) -> bool:
    """No such process, or only its zombie is left (its parent has not collected it yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in "ZX"
    except FileNotFoundError:
        return True


def wait_until(cond, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


class Agent:
    """An `rtvb-probe agent --fd N` on a socketpair, with the received lines sorted by command id."""

    def __init__(self, probe: Path):
        self.sock, theirs = socket.socketpair()
        fd = theirs.fileno()
        # Its console (stderr) goes to a file: a pipe nobody reads could block the agent.
        self.console = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([str(probe), "agent", "--fd", str(fd)], pass_fds=(fd,),
                                     stderr=self.console, start_new_session=True)
        theirs.close()
        self.sock.settimeout(30)
        self.pending = b""
        self.order: list[tuple[int, str, bytes]] = []   # (id, kind, text) in arrival order
        self.out: dict[int, list[bytes]] = defaultdict(list)
        self.err: dict[int, list[bytes]] = defaultdict(list)
        self.exits: dict[int, int] = {}
        self.ticks: list[tuple[int, int]] = []           # (tick boottime ns, host boottime ns at receipt)
        self.logs: list[str] = []
        self.ready = self.line()

    def send(self, line: str) -> None:
        self.sock.sendall(line.encode() + b"\n")

    def run(self, cid: int, *argv: str | bytes) -> None:
        self.send(f"run {cid} " + " ".join(hexarg(a) for a in argv))

    def line(self) -> bytes:
        """The next line from the agent, without its '\\n'; b"" at EOF."""
        while b"\n" not in self.pending:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                rest, self.pending = self.pending, b""
                return rest
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line

    def pump(self) -> bool:
        """Read and file one line; False at EOF."""
        line = self.line()
        if not line:
            return False
        head, _, rest = line.partition(b" ")
        if head == b"tick":
            self.ticks.append((int(rest), time.clock_gettime_ns(time.CLOCK_BOOTTIME)))
        elif head == b"log":
            self.logs.append(rest.decode())
        else:
            cid = int(head)
            kind, _, text = rest.partition(b" ")
            self.order.append((cid, kind.decode(), text))
            if kind == b"out":
                self.out[cid].append(text)
            elif kind == b"err":
                self.err[cid].append(text)
            else:
                assert kind == b"exit", line[:200]
                assert cid not in self.exits, f"two exit lines for {cid}"
                self.exits[cid] = int(text)
        return True

    def wait_exit(self, cid: int) -> int:
        while cid not in self.exits:
            assert self.pump(), f"the agent closed the channel before command {cid} ended"
        return self.exits[cid]

    def wait_out(self, cid: int, n: int = 1) -> list[bytes]:
        while len(self.out[cid]) < n:
            assert cid not in self.exits, (self.out[cid], self.err[cid])
            assert self.pump()
        return self.out[cid]

    def wait_logs(self, n: int) -> list[str]:
        while len(self.logs) < n:
            assert self.pump()
        return self.logs

    def close(self) -> int:
        """Power off and return the agent's exit status."""
        if self.proc.poll() is None:
            try:
                self.send("poweroff")
            except OSError:
                pass
        try:
            return self.proc.wait(timeout=10)
        finally:
            self.sock.close()
            self.console.close()


@pytest.fixture
def agent(probe):
    a = Agent(probe)
    yield a
    if a.proc.poll() is None:
        a.close()


def test_ready_then_probe_subcommands_stream_intact_json(agent, probe):
    word, version, boot_ns = agent.ready.split(b" ")
    assert word == b"ready" and version == b"0.1.0"
    assert abs(int(boot_ns) - time.clock_gettime_ns(time.CLOCK_BOOTTIME)) < 5e9

    agent.run(1, str(probe), "sysinfo")
    agent.run(2, str(probe), "latency", "--interval-us", "1000", "--duration-s", "1", "--cpus", "0")
    assert agent.wait_exit(1) == 0
    assert agent.wait_exit(2) == 0

    sysinfo = records(b"\n".join(agent.out[1]).decode())
    assert [r["type"] for r in sysinfo] == ["meta", "sysinfo", "end"]
    assert sysinfo[1]["machine"] == os.uname().machine
    latency = records(b"\n".join(agent.out[2]).decode())
    assert latency[0]["type"] == "meta" and latency[-1] == {**latency[-1], "type": "end", "status": "ok"}
    (total,) = [r for r in of_type(latency, "result") if r["cpu"] == "all"]
    assert 500 <= total["count"] <= 1001   # 1 s at 1 ms; a loaded machine misses some
    assert not agent.err[1]


@pytest.mark.functional
def test_concurrent_commands_stay_separated_by_id(agent, tmp_path):
    # Each command writes lines of 10 000 bytes in two halves, and the two take turns half by half
    # (each half waits for a marker file the other touches after its previous half): while a line of
    # one stands half written in its pipe, the other writes, whatever the scheduler does.
    script = ('me=$1; other=$2; lag=$3; dir=$4; half=$(head -c 5000 /dev/zero | tr "\\0" "$me"); k=0; '
              'while [ $k -lt 40 ]; do j=$((k - lag)); '
              'if [ $j -ge 0 ]; then while [ ! -e "$dir/$other$j" ]; do sleep 0.01; done; fi; '
              'if [ $((k % 2)) -eq 0 ]; then printf "%d %s" $((k / 2)) "$half"; else printf "%s\\n" "$half"; fi; '
              ': > "$dir/$me$k"; k=$((k + 1)); done')
    agent.run(1, "/bin/sh", "-c", script, "x", "A", "B", "1", str(tmp_path))
    agent.run(2, "/bin/sh", "-c", script, "x", "B", "A", "0", str(tmp_path))
    assert agent.wait_exit(1) == 0 and agent.wait_exit(2) == 0, (agent.err[1], agent.err[2])
    for cid, ch in ((1, b"A"), (2, b"B")):
        assert agent.out[cid] == [b"%d %s" % (i, ch * 10000) for i in range(20)]
    ids = [cid for cid, kind, _ in agent.order if kind == "out"]
    # Both ran at once: the arrival order switches between them more than once. (A pipe holds at
    # most 6 such lines, and neither command can get more than one half ahead of the other, so
    # neither's 20 lines can all arrive before the other's first.)
    assert sum(a != b for a, b in zip(ids, ids[1:])) >= 2, ids


@pytest.mark.functional
def test_long_line_and_final_unterminated_line_arrive_whole(agent):
    agent.run(1, "/bin/sh", "-c", "head -c 204800 /dev/zero | tr '\\0' x; echo; printf 'tail without newline'")
    assert agent.wait_exit(1) == 0
    assert agent.out[1] == [b"x" * 204800, b"tail without newline"]


@pytest.mark.functional
def test_slow_host_gets_all_output_in_order_and_before_exit(agent, tmp_path):
    # 10 MB while the host does not read: the agent's queue reaches its limit and it stops reading
    # the commands' pipes (command 1 blocks on its output). Command 2 writes its line and exits
    # while its pipe is not being read: the line must still come, and before its `exit`.
    agent.run(1, "/bin/sh", "-c", 'yes "$(head -c 999 /dev/zero | tr "\\0" a)" | head -n 10000; echo done')
    go, pid_file = tmp_path / "go", tmp_path / "pid"
    agent.run(2, "/bin/sh", "-c", f'echo $$ > {pid_file}; while [ ! -e {go} ]; do sleep 0.01; done; echo last')
    # Command 2 is only let go once the agent has stopped reading pipes: it then polls nothing but
    # its channel and its signals (2 descriptors) while both commands still run. Its pid file is
    # written after the agent started it, so a poll from before the commands cannot be mistaken.
    pid = int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 60, "command 2 to start"))
    wait_for(lambda: poll_nfds(agent.proc.pid) == 2, 60, "the agent to stop reading the commands' pipes")
    go.touch()
    wait_for(lambda: pid_gone(pid), 60, "command 2 to end")
    assert agent.wait_exit(2) == 0 and agent.wait_exit(1) == 0
    assert agent.out[2] == [b"last"]
    assert agent.order.index((2, "out", b"last")) < agent.order.index((2, "exit", b"0"))
    assert len(agent.out[1]) == 10001 and agent.out[1][-1] == b"done"
    assert set(agent.out[1][:-1]) == {b"a" * 999}


@pytest.mark.functional
def test_sigint_stops_latency_with_its_results(agent, probe):
    agent.run(7, str(probe), "latency", "--interval-us", "1000", "--cpus", "0", "--window-s", "0.2")
    # Signalled once a window with a wake-up in it is out: it is measuring, and has measured.
    n = 0
    while not ((rec := json.loads(agent.wait_out(7, n + 1)[n]))["type"] == "window" and rec["count"] > 0):
        assert rec["type"] in ("meta", "warning", "window"), rec
        n += 1
    agent.send("signal 7 2")
    assert agent.wait_exit(7) == 0
    recs = records(b"\n".join(agent.out[7]).decode())
    assert recs[-1]["type"] == "end" and recs[-1]["status"] == "interrupted"
    assert [r for r in of_type(recs, "result") if r["cpu"] == "all"][0]["count"] > 0


@pytest.mark.functional
def test_killed_command_exits_128_plus_signal(agent):
    agent.run(3, "/bin/sleep", "30")
    t0 = time.monotonic()
    agent.send("signal 3 9")
    assert agent.wait_exit(3) == 137
    assert time.monotonic() - t0 < 20


@pytest.mark.functional
def test_exec_failure_is_an_err_line_and_127(agent):
    agent.run(4, "/nonexistent/command", "arg")
    assert agent.wait_exit(4) == 127
    assert agent.err[4] == [b"cannot execute /nonexistent/command: No such file or directory"]
    assert not agent.out[4]


@pytest.mark.functional
def test_hex_arguments_reach_argv_exactly(agent):
    args = ["a b", "line1\nline2", "q'uo\"te\\", "", "tab\there", "ünïcode €", "-", "  "]
    # Each argument printed back as hex by the command itself: nothing the line protocol could bend.
    script = 'for a in "$@"; do printf %s "$a" | od -An -tx1 -v | tr -d " \\n"; echo; done'
    agent.send("run 5 " + " ".join([hexarg("/bin/sh"), hexarg("-c"), hexarg(script).upper(), hexarg("x")]
                                   + [hexarg(a) for a in args]))
    assert agent.wait_exit(5) == 0, agent.err[5]
    assert [bytes.fromhex(h.decode()).decode() for h in agent.out[5]] == args


@pytest.mark.functional
def test_read_answers_like_a_command(agent, tmp_path):
    agent.send(f"read 1 {hexarg('/proc/self/status')}")
    assert agent.wait_exit(1) == 0
    fields = dict(l.decode().split(":\t", 1) for l in agent.out[1])
    assert fields["Pid"] == str(agent.proc.pid) and fields["Name"] == "rtvb-probe"

    known = b"first line\n\nthird \xff line\nno newline at the end"
    (tmp_path / "f").write_bytes(known)
    agent.send(f"read 2 {hexarg(str(tmp_path / 'f'))}")
    assert agent.wait_exit(2) == 0
    assert agent.out[2] == known.split(b"\n")

    agent.send(f"read 3 {hexarg(str(tmp_path / 'missing'))}")
    assert agent.wait_exit(3) == 1
    assert agent.err[3] == [f"cannot open {tmp_path / 'missing'}: No such file or directory".encode()]
    assert not agent.out[3]


def test_ticks_every_second_while_a_command_is_quiet(agent):
    agent.run(1, "/bin/sleep", "3")
    assert agent.wait_exit(1) == 0
    assert len(agent.ticks) >= 2, agent.ticks
    stamps = [t for t, _ in agent.ticks]
    assert all(0.9e9 <= b - a <= 3e9 for a, b in zip(stamps, stamps[1:])), stamps
    # The stamp is CLOCK_BOOTTIME of this machine, taken just before sending.
    assert all(0 <= received - tick < 2e9 for tick, received in agent.ticks), agent.ticks


@pytest.mark.functional
def test_malformed_lines_are_logged_and_serving_goes_on(agent):
    bad = ["frobnicate 1", "run x 2f62696e2f74727565", "run 5 zz", "run 6", "signal 1",
           "signal 1 0", "run 7  2f", "read 8 2f6", "poweroff now", "run 9 2f00"]
    for line in bad:
        agent.send(line)
    agent.send("signal 424242 15")   # well-formed, but no such command
    logs = agent.wait_logs(len(bad) + 1)
    for line, log in zip(bad, logs):
        assert log.startswith(f"bad request line '{line}': ") and log.endswith("; ignored."), log
    assert "no running command with id 424242" in logs[-1]
    agent.run(10, "/bin/true")
    assert agent.wait_exit(10) == 0
    assert set(agent.exits) == {10} and agent.proc.poll() is None


@pytest.mark.functional
def test_orphans_are_reaped_and_do_not_delay_exit(agent, tmp_path):
    # The orphan runs until the test creates its file, however long the exit line takes to come.
    hold = tmp_path / "hold"
    agent.run(1, "/bin/sh", "-c", f"(while [ ! -e {hold} ]; do sleep 0.05; done) & echo $!")
    orphan = int(agent.wait_out(1)[0])
    assert agent.wait_exit(1) == 0
    # The exit came while the orphan, which still holds the stdout pipe, was running ...
    assert os.path.exists(f"/proc/{orphan}") and not pid_gone(orphan)
    hold.touch()
    # ... and the agent, its reaper now, collects it: not even a zombie is left.
    assert wait_until(lambda: not os.path.exists(f"/proc/{orphan}"), 60)


@pytest.mark.functional
def test_poweroff_kills_running_command_groups_and_exits_0(agent):
    agent.run(1, "/bin/sh", "-c", "sleep 60 & echo $$ $!; wait")
    pids = [int(p) for p in agent.wait_out(1)[0].split()]
    agent.send("poweroff")
    assert agent.proc.wait(timeout=10) == 0
    assert wait_until(lambda: all(pid_gone(p) for p in pids)), pids


@pytest.mark.functional
def test_host_closing_the_channel_ends_the_agent(probe):
    a = Agent(probe)
    a.run(1, "/bin/sh", "-c", "echo $$; exec sleep 60")
    pid = int(a.wait_out(1)[0])
    a.sock.shutdown(socket.SHUT_RDWR)
    assert a.proc.wait(timeout=10) == 0
    assert wait_until(lambda: pid_gone(pid))
    a.console.seek(0)
    assert b"the host closed the channel" in a.console.read()
    a.close()


@pytest.mark.functional
def test_usage_errors(probe):
    for args, phrase in ((["agent"], "exactly one of --fd"), (["agent", "--fd", "x"], "--fd must be a file descriptor number"),
                         (["agent", "--fd", "987"], "not an open file descriptor"),
                         (["agent", "--channel", "/nonexistent/sock"], "cannot open the channel"),
                         (["init"], "runs only as PID 1")):
        proc = subprocess.run([str(probe), *args], capture_output=True, text=True, timeout=10)
        assert proc.returncode == 2 and phrase in proc.stderr, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1


@pytest.fixture(scope="module")
def ubsan_probe(tmp_path_factory):
    """The probe built with the undefined-behaviour sanitizer, aborting at the first report."""
    out = tmp_path_factory.mktemp("ubsan") / "rtvb-probe"
    sources = [str(p) for folder in ("", "work", "core") for p in sorted((REPO / "probe" / folder).glob("*.c"))]
    cc = subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-D_FILE_OFFSET_BITS=64", "-O1", "-g", "-pthread",
                         "-I", str(REPO / "probe" / "core"),
                         "-fsanitize=undefined", "-fno-sanitize-recover=undefined", "-o", str(out), *sources,
                         "-lm"], capture_output=True, text=True)
    if cc.returncode != 0:
        pytest.skip(f"no UBSan build here: {cc.stderr.strip()[-200:]}")
    return out


@pytest.mark.functional
def test_an_agent_session_has_no_undefined_behaviour(ubsan_probe):
    # Empty output frames, arguments and reads are where a NULL pointer met memcpy.
    a = Agent(ubsan_probe)
    try:
        a.run(1, "/bin/sh", "-c", "printf ''; printf '\\n'; echo x")
        a.run(2, "/bin/true")
        assert a.wait_exit(1) == 0 and a.wait_exit(2) == 0
        assert a.out[1] == [b"", b"x"]
        a.send("poweroff")
        assert a.proc.wait(timeout=10) == 0
        a.console.seek(0)
        console = a.console.read().decode(errors="replace")
        assert "runtime error" not in console, console
    finally:
        a.close()
