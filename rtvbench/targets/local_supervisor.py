"""Supervisor of one background load command on the local machine (run as a script).

Usage: python local_supervisor.py GRACE_S -- COMMAND [ARGS...]

The runner starts this script as the leader of a new session; it starts COMMAND in
the same process group and watches two things:
  - stdin, a pipe whose only writer is the runner: end of file means the runner is
    gone, whatever killed it (even SIGKILL, which runs no clean-up code);
  - SIGTERM/SIGINT/SIGHUP: the runner asks for the load to stop.
Either way, or when COMMAND ends by itself, it terminates the whole group (SIGTERM,
then SIGKILL after GRACE_S) and, being a child subreaper, also reaps descendants
that left the group, so that no load process outlives the measurement.

Exit status: COMMAND's own status if it ended by itself (128+N for signal N), else 0.
Kept free of rtvbench imports and of anything outside the standard library: it runs with
`python -I -S` (no site-packages to scan) for a fast start.
"""

import ctypes
import os
import select
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def _descendants() -> list[int]:
    """Processes below us in the tree, or in our process group (excluding us)."""
    me, pgid = os.getpid(), os.getpgid(0)
    parent_of, in_group = {}, set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # Fields after the parenthesised command name: state ppid pgrp ...
        fields = stat[stat.rindex(b")") + 2:].split()
        pid = int(entry)
        parent_of[pid] = int(fields[1])
        if int(fields[2]) == pgid:
            in_group.add(pid)
    found = set(in_group)
    changed = True
    while changed:
        changed = False
        for pid, ppid in parent_of.items():
            if pid not in found and (ppid == me or ppid in found):
                found.add(pid)
                changed = True
    found.discard(me)
    return sorted(found)


def _reap_nohang() -> bool:
    """Reap finished children; True when we have none left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False


def _signal_all(sig: int) -> None:
    for pid in _descendants():
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _terminate_all(grace: float, wake_r: int) -> None:
    # The group, plus descendants that left it (setpgid/setsid).
    try:
        os.killpg(0, signal.SIGTERM)      # reaches us too: our handler only sets a flag
    except ProcessLookupError:
        pass
    _signal_all(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if _reap_nohang() and not _descendants():
            return
        # A child's end (SIGCHLD) wakes this at once: the runner waits for it between measurements.
        if select.select([wake_r], [], [], 0.005)[0]:
            os.read(wake_r, 4096)
    for _ in range(50):
        if not _descendants():
            break
        _signal_all(signal.SIGKILL)
        time.sleep(0.02)
        _reap_nohang()
    while not _reap_nohang():
        time.sleep(0.01)


def main() -> int:
    grace = float(sys.argv[1])
    argv = sys.argv[3:]
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.append(True))
    # Every signal (a stop request, the command's SIGCHLD) also writes a byte here, so the select
    # below returns at once rather than at its next timeout: stopping a load is on every
    # measurement's path.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    # Orphaned grandchildren are re-parented to us, so we can see and reap them.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        # posix_spawn rather than subprocess, whose import would be most of this script's start-up,
        # which lies between every two measurements. The command gets what a shell would give it:
        # stdin from /dev/null, SIGPIPE (which Python ignores) back at its default.
        child = os.posix_spawnp(argv[0], argv, os.environ,
                                file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)],
                                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
    except OSError as e:
        print(f"cannot start {argv[0]!r}: {e.strerror}", file=sys.stderr, flush=True)
        return 127
    status = None
    while not stop:
        ready, _, _ = select.select([0, wake_r], [], [], 1.0)
        if wake_r in ready:
            os.read(wake_r, 4096)
        if 0 in ready and not os.read(0, 4096):
            break                                   # the runner is gone
        pid, wait_status = os.waitpid(child, os.WNOHANG)
        if pid == child:
            status = os.waitstatus_to_exitcode(wait_status)
            break
    _terminate_all(grace, wake_r)
    if status is None:
        return 0
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)
