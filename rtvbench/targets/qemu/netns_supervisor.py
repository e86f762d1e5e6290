"""Keeper of the guests' network namespace (run as a script, as root).

Usage: python netns_supervisor.py NAME BRIDGE ADDRESS/PREFIX

Creates network namespace NAME (`ip netns add`), brings its loopback up, adds bridge BRIDGE with
ADDRESS/PREFIX (the host's end of the guests' network) and prints `ready`; on a failure, one line
saying what failed, and it exits 1. Then it waits, and deletes the namespace (with the bridge and
the guests' tap devices in it) when
  - stdin, a pipe whose only writer is the runner, reads end of file: the runner closed it, or is
    gone, whatever killed it (even SIGKILL, which runs no clean-up code of the runner's);
  - or SIGTERM/SIGHUP asks it to.
It ignores SIGINT: a Ctrl-C at the terminal is the runner's to handle, and the runner still needs
the namespace to stop what runs in it.

Kept free of rtvbench imports: it runs with `python -I` for a fast start.
"""

import select
import signal
import subprocess
import sys


def ip(*args: str) -> str | None:
    """Run `ip ARGS`; None when it worked, else its complaint."""
    try:
        r = subprocess.run(["ip", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    except OSError as e:
        return f"cannot run ip ({e.strerror}): install iproute2"
    if r.returncode == 0:
        return None
    return f"`ip {' '.join(args)}` failed: {r.stderr.strip() or f'exit status {r.returncode}'}"


def main() -> int:
    name, bridge, address = sys.argv[1:4]
    stop = []
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.append(True))
    problem = ip("netns", "add", name)
    if problem:
        print(problem, flush=True)
        return 1
    try:
        for step in (("link", "set", "lo", "up"), ("link", "add", bridge, "type", "bridge"),
                     ("addr", "add", address, "dev", bridge), ("link", "set", bridge, "up")):
            problem = ip("-n", name, *step)
            if problem:
                print(problem, flush=True)
                return 1
        print("ready", flush=True)
        while not stop:
            try:
                ready, _, _ = select.select([0], [], [], 1.0)
            except InterruptedError:
                continue
            if ready:
                try:
                    if not sys.stdin.buffer.raw.read(4096):
                        break                   # the runner closed its end, or is gone
                except OSError:
                    break
        return 0
    finally:
        ip("netns", "del", name)


if __name__ == "__main__":
    sys.exit(main())
