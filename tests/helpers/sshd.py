"""A private OpenSSH server on 127.0.0.1 for the ssh target's tests, or at an address inside a
network namespace (a board of a farm: `netns`, `address`).

Everything lives in one directory: the server's host key and config, a client key that the
server's authorized_keys accepts, a known_hosts file with the server's key, and an ssh config
file with the Host alias `rtvb-test`. Nothing under ~/.ssh is read or written: the client is
always run with `-F` on that config, which names the key and the known_hosts file.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
ALIAS = "rtvb-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path, comment: str) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL)


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command name) of every process."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes().decode(errors="replace")
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        found[int(entry)] = (int(stat[stat.rindex(")") + 2:].split()[1]), name)
    return found


def descendants(pid: int) -> dict[int, str]:
    """pid -> command name of every process below pid."""
    procs = _processes()
    found: dict[int, str] = {}
    frontier = {pid}
    while frontier:
        frontier = {p for p, (ppid, _) in procs.items() if ppid in frontier and p not in found}
        found.update({p: procs[p][1] for p in frontier})
    return found


def command_lines(pids) -> list[str]:
    """The command lines of the processes that still run, arguments joined by spaces."""
    found = []
    for pid in pids:
        try:
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            pass
    return found


def available() -> str | None:
    """Why the server cannot run here, or None."""
    if not os.path.exists(SSHD):
        return "sshd is not installed (apt-get install openssh-server)"
    if shutil.which("ssh") is None:
        return "the OpenSSH client is not installed (apt-get install openssh-client)"
    return None


class Sshd:
    def __init__(self, root: Path, extra_config: str = "", netns: str | None = None,
                 address: str = "127.0.0.1") -> None:
        self.root = root
        self.extra_config = extra_config        # more sshd_config lines (e.g. a ForceCommand)
        self.netns = netns                      # the network namespace it listens in (`ip netns`)
        self.address = address                  # where it listens, reachable from this namespace
        self.port = _free_port()
        self.user = getpass.getuser()
        self.host_key = root / "host_ed25519"
        self.client_key = root / "client_ed25519"
        self.known_hosts = root / "known_hosts"
        self.config = root / "ssh_config"
        self.proc: subprocess.Popen | None = None
        self.log = root / "sshd.log"

    def start(self) -> "Sshd":
        self.root.mkdir(parents=True, exist_ok=True)
        _keygen(self.host_key, "rtvb-test-host")
        _keygen(self.client_key, "rtvb-test-client")
        (self.root / "authorized_keys").write_text(Path(f"{self.client_key}.pub").read_text())
        host_pub = " ".join(Path(f"{self.host_key}.pub").read_text().split()[:2])
        self.known_hosts.write_text(f"[{self.address}]:{self.port} {host_pub}\n")
        (self.root / "sshd_config").write_text(
            f"ListenAddress {self.address}:{self.port}\n"
            f"HostKey {self.host_key}\n"
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}\n"
            f"PidFile {self.root / 'sshd.pid'}\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
            # The key files are under a test's temporary directory, not the user's home.
            "StrictModes no\nUsePAM no\n"
            # Many test connections, some at once: no throttling of unauthenticated ones.
            "MaxStartups 100\nMaxSessions 100\nLogLevel VERBOSE\n" + self.extra_config)
        self.write_client_config(self.config)
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)     # sshd's privilege separation dir
        return self.launch()

    def launch(self) -> "Sshd":
        """Start the server process with the keys and config start() made (again after stop(): a
        board switched back on)."""
        inside = ["ip", "netns", "exec", self.netns] if self.netns else []     # which execs sshd itself
        self.proc = subprocess.Popen([*inside, SSHD, "-D", "-e", "-f", str(self.root / "sshd_config")],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log, "wb"), start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd did not start: {self.log.read_text()}")
            try:
                socket.create_connection((self.address, self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd does not listen on port {self.port}: {self.log.read_text()}")

    def write_client_config(self, path: Path, known_hosts: Path | None = None, alias: str = ALIAS) -> Path:
        """An ssh config naming this server `alias` (known_hosts: another file to verify with)."""
        path.write_text(
            f"Host {alias}\n"
            f"  HostName {self.address}\n"
            f"  Port {self.port}\n"
            f"  User {self.user}\n"
            f"  IdentityFile {self.client_key}\n"
            "  IdentitiesOnly yes\n"
            "  IdentityAgent none\n"
            f"  UserKnownHostsFile {known_hosts or self.known_hosts}\n"
            "  GlobalKnownHostsFile /dev/null\n")
        return path

    def connection_processes(self) -> list[int]:
        """The server's per-connection processes (below the listener; the commands that
        the sessions run are not among them)."""
        assert self.proc is not None
        return sorted(p for p, name in descendants(self.proc.pid).items() if name == "sshd")

    def session_commands(self) -> dict[int, str]:
        """pid -> name of what the sessions run (everything below the server that is not sshd)."""
        assert self.proc is not None
        return {p: name for p, name in descendants(self.proc.pid).items() if name != "sshd"}

    def probe_commands(self) -> list[str]:
        """The command lines of the rtvb-probe processes the sessions run."""
        return command_lines(pid for pid, name in self.session_commands().items() if name == "rtvb-probe")

    def drop_connections(self) -> int:
        """Kill every connection's server side, as a crashed or rebooted host would; how many."""
        pids = self.connection_processes()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.drop_connections()
            self.proc.terminate()
            self.proc.wait(10)
