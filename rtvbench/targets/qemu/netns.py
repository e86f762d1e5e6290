"""The guests' network: a bridge in a network namespace of the campaign run's own (docs/targets/qemu.md).

Every qemu environment with `network = true` puts each of its guests on one bridge, in a namespace
rtvbench creates for the run (`rtvb-<runner pid>-<random>`): the host's own interfaces, routes and
namespaces are never touched, and round-trip traffic never leaves the namespace. The host's end is
the bridge's address, `10.X.Y.1/24` (X.Y random per run); the guests get .2, .3, ... in the order
they are prepared. A guest's tap device is created in the namespace (persistent, on the bridge);
QEMU is started inside the namespace (setns before exec, guest.py) and opens it by name. A local
environment's end of a round trip with a guest runs inside the namespace too (`ip netns exec`).

Teardown does not depend on the runner's own clean-up: the namespace is created and deleted by a
small supervisor process (netns_supervisor.py) that deletes it when the runner closes its pipe or
dies (even SIGKILLed). Should the supervisor itself be killed, the namespace's name carries the
runner's pid, and the next network set up on this machine deletes the `rtvb-` namespaces whose
runner is gone.
"""

from __future__ import annotations

import os
import re
import secrets
import select
import shutil
import subprocess
import sys
from pathlib import Path

from rtvbench.errors import TargetError
from rtvbench.run_files import alive

SUPERVISOR = Path(__file__).with_name("netns_supervisor.py")
NETNS_DIR = Path("/run/netns")       # where `ip netns` keeps its named namespaces
BRIDGE = "rtvbbr0"
PREFIX_LEN = 24
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
_OURS = re.compile(r"rtvb-(\d+)-[0-9a-f]+$")


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        raise TargetError(f"`ip {' '.join(args)}` failed ({r.stderr.strip() or r.returncode}); "
                          "the guests' network cannot be set up.")


def sweep() -> list[str]:
    """Delete the namespaces of runs whose runner is gone (its supervisor was killed too); their names."""
    gone = []
    try:
        names = sorted(os.listdir(NETNS_DIR))
    except OSError:
        return gone
    for name in names:
        m = _OURS.match(name)
        if m and not alive(int(m.group(1))):
            subprocess.run(["ip", "netns", "del", name], stdin=subprocess.DEVNULL, capture_output=True)
            gone.append(name)
    return gone


def problem() -> str | None:
    """Why this machine cannot give guests a network now, or None."""
    if os.geteuid() != 0:
        return ("network = true needs root (a network namespace, a bridge and tap devices are created for "
                "the guests); run rtvbench as root, e.g. with sudo, or drop `network`")
    if shutil.which("ip") is None:
        return "network = true needs the `ip` command; install iproute2 (apt-get install iproute2)"
    if not os.path.exists("/dev/net/tun"):
        return "network = true needs /dev/net/tun for the guests' tap devices; load it with `modprobe tun`"
    return None


class GuestNetwork:
    """One namespace with its bridge, kept by a supervisor process; guests are added one by one."""

    def __init__(self) -> None:
        sweep()
        self.name = f"rtvb-{os.getpid()}-{secrets.token_hex(3)}"
        net = secrets.randbelow(256 * 256)
        self.prefix = f"10.{net >> 8}.{net & 255}"
        self.host_address = f"{self.prefix}.1"
        self._next = 2
        read_end, self._watch = os.pipe()        # non-inheritable: only the supervisor gets read_end
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", str(SUPERVISOR), self.name, BRIDGE, f"{self.host_address}/{PREFIX_LEN}"],
                stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        except BaseException:
            os.close(self._watch)
            raise
        finally:
            os.close(read_end)
        ready, _, _ = select.select([self._proc.stdout], [], [], START_TIMEOUT_S)
        line = self._proc.stdout.readline().decode("utf-8", "replace").strip() if ready else ""
        if line != "ready":
            self.close()
            raise TargetError(f"cannot set up the guests' network namespace {self.name}: "
                              f"{line or f'no answer within {START_TIMEOUT_S:g} s'}.")

    def add_guest(self) -> tuple[str, str, str]:
        """A tap device on the bridge for one more guest: (its name, the guest's address, its MAC)."""
        host = self._next
        if host > 254:
            raise TargetError(f"the guests' network {self.prefix}.0/{PREFIX_LEN} has room for 253 guests; "
                              "boot fewer guests with network = true.")
        self._next += 1
        tap = f"rtvbtap{host}"
        _ip("-n", self.name, "tuntap", "add", "dev", tap, "mode", "tap")
        _ip("-n", self.name, "link", "set", tap, "master", BRIDGE, "up")
        # Locally administered, unique in the run: the guest's address in the last three bytes.
        a, b = (int(x) for x in self.prefix.split(".")[1:])
        mac = f"52:54:{0x0a:02x}:{a:02x}:{b:02x}:{host:02x}"
        return tap, f"{self.prefix}.{host}", mac

    def close(self) -> None:
        """Have the supervisor delete the namespace, and wait until it has; idempotent."""
        if self._watch >= 0:
            os.close(self._watch)
            self._watch = -1
        try:
            self._proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
            subprocess.run(["ip", "netns", "del", self.name], stdin=subprocess.DEVNULL, capture_output=True)
        self._proc.stdout.close()


_network: GuestNetwork | None = None
_users: set[int] = set()


def acquire(user: object) -> GuestNetwork:
    """The run's network, set up for its first user (who has checked problem() first)."""
    global _network
    if _network is None:
        _network = GuestNetwork()
    _users.add(id(user))
    return _network


def release(user: object) -> None:
    """The user no longer needs it: the last one's release deletes the namespace."""
    global _network
    _users.discard(id(user))
    if not _users and _network is not None:
        network, _network = _network, None
        network.close()
