"""The master connection every command to an ssh environment goes through.

Using `ssh` itself (not a Python SSH library) means ~/.ssh/config, ProxyJump, keys and agents
work as they do for the user by hand. One master connection per environment is shared by
every command (ControlMaster, socket in a private temporary directory), so a command costs a
session, not a handshake. ssh never prompts (BatchMode) and host keys are always verified
with the user's own settings: rtvbench never weakens them.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import IO, Callable

from rtvbench.errors import TargetError, TargetLost
from rtvbench.run_files import alive as _alive
from rtvbench.targets.ssh.params import SshParams

CONNECT_TIMEOUT_S = 15      # default ConnectTimeout when the user's config sets none
# A dead peer (a board that hangs, a cable pulled) is noticed within interval x count seconds;
# generous, because a busy real-time target may answer late.
ALIVE_INTERVAL_S, ALIVE_COUNT = 10, 6
CONTROL_PERSIST_S = 300     # an idle master ends by itself, even if rtvbench was killed
COMMAND_TIMEOUT_S = 120     # short housekeeping commands (uname, mktemp, copying the probe)

#: a runner's local directory of its master connection: rtvb-ssh-<pid>-XXXXXXXX
CONTROL_PREFIX = "rtvb-ssh-"


def _tail(f: IO[bytes], limit: int = 8000) -> str:
    # pread: ssh writes through the same open file, whose offset a seek here would move.
    size = os.fstat(f.fileno()).st_size
    start = max(0, size - limit)
    return os.pread(f.fileno(), size - start, start).decode("utf-8", "replace")


def _last_line(text: str) -> str:
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else "no message"


class SshConnection:
    """One environment's master connection: the ssh command lines that share it, starting it (again
    after the board went away), stopping it, and short commands run through it; with what it learns
    of the host on the way (its effective ssh settings, its architecture and name), which outlives
    a stopped master."""

    def __init__(self, name: str, params: SshParams, opened: Callable[[], None]) -> None:
        self.name = name
        self.params = params
        # Called when the control directory is made: from then on there is a master connection
        # and a directory to clean up at exit.
        self._opened = opened
        self.control_dir: str | None = None
        self._settings: dict[str, str] | None = None
        self._connected_once = False
        self.unreachable = False        # the last attempt to connect failed
        self._facts: dict[str, str] | None = None
        self._connect_lock = threading.Lock()

    # -- the ssh command lines ------------------------------------------------

    def _common_argv(self) -> list[str]:
        p = self.params
        argv = ["ssh"]
        if p.ssh_config:
            argv += ["-F", p.ssh_config]
        if p.port:
            argv += ["-p", str(p.port)]
        for option in p.options:
            argv += ["-o", option]
        return argv

    def _settings_of(self) -> dict[str, str]:
        """The effective client settings for the host (`ssh -G`: the config, no network)."""
        if self._settings is None:
            try:
                out = subprocess.run([*self._common_argv(), "-G", "-T", "--", self.params.host],
                                     stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                     timeout=30)
            except FileNotFoundError:
                raise TargetError("the OpenSSH client `ssh` is not installed: install it "
                                  "(e.g. apt-get install openssh-client) to use ssh environments.") from None
            if out.returncode != 0:
                raise TargetError(f"ssh rejects the settings of environment {self.name}: "
                                  f"{_last_line(out.stderr)}; fix its host, ssh_config or options.")
            settings = {}
            for line in out.stdout.splitlines():
                key, _, value = line.partition(" ")
                settings.setdefault(key.lower(), value)
            self._settings = settings
        return self._settings

    def _base_argv(self) -> list[str]:
        if self.control_dir is None:
            # Socket paths are limited to ~100 bytes: keep it short whatever TMPDIR is.
            base = tempfile.gettempdir()
            base = base if len(base) < 60 else "/tmp"
            _remove_dead_control_dirs(Path(base))
            self.control_dir = tempfile.mkdtemp(prefix=f"{CONTROL_PREFIX}{os.getpid()}-", dir=base)
            self._opened()
        s = self._settings_of()
        argv = self._common_argv() + ["-o", "BatchMode=yes",
                                      "-o", f"ControlPath={self.control_dir}/master"]
        # Defaults only where the user's own settings say nothing.
        if s.get("connecttimeout", "none") == "none":
            argv += ["-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"]
        if s.get("serveraliveinterval", "0") == "0":
            argv += ["-o", f"ServerAliveInterval={ALIVE_INTERVAL_S}",
                     "-o", f"ServerAliveCountMax={ALIVE_COUNT}"]
        return argv

    def client_argv(self, command: str) -> list[str]:
        return [*self._base_argv(), "-o", "ControlMaster=no", "-T", "--", self.params.host, command]

    def _by_hand(self) -> str:
        """The command a user types to connect as rtvbench does."""
        return shlex.join([*self._common_argv(), self.params.host])

    # -- the master connection ------------------------------------------------

    def master_pid(self) -> int | None:
        """The master connection's process id, or None when there is no working master."""
        if self.control_dir is None or not os.path.exists(f"{self.control_dir}/master"):
            return None
        r = subprocess.run([*self._base_argv(), "-O", "check", "--", self.params.host],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        m = re.search(r"pid=(\d+)", r.stderr)
        return int(m.group(1)) if r.returncode == 0 and m else None

    def _master_alive(self) -> bool:
        return self.master_pid() is not None

    def stop_master(self) -> None:
        pid = self.master_pid()
        if pid is None:
            return
        subprocess.run([*self._base_argv(), "-O", "exit", "--", self.params.host],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        # It exits at once unless it is stuck on a dead peer: then it goes the hard way.
        for _ in range(50):
            if not _alive(pid):
                return
            threading.Event().wait(0.02)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        # Gone before we return: a caller may reconnect at once, and a master still answering on
        # its socket would be taken for the new one.
        for _ in range(500):
            if not _alive(pid):
                return
            threading.Event().wait(0.02)

    def connect(self, timeout: float = CONNECT_TIMEOUT_S + 60) -> None:
        """Make sure the master connection is up; (re)establish it when not (giving up after
        `timeout` s: a board that does not answer at all)."""
        with self._connect_lock:
            if self._master_alive():
                return
            base = self._base_argv()      # creates the control directory
            log = Path(self.control_dir) / "master.log"
            log.unlink(missing_ok=True)
            # A socket left by a master that was killed would make the new one run unshared.
            (Path(self.control_dir) / "master").unlink(missing_ok=True)
            with tempfile.TemporaryFile() as err:
                try:
                    r = subprocess.run([*base, "-o", "ControlMaster=yes",
                                        "-o", f"ControlPersist={CONTROL_PERSIST_S}",
                                        "-E", str(log), "-N", "-f", "--", self.params.host],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=err, start_new_session=True,
                                       timeout=timeout)
                    code = r.returncode
                except subprocess.TimeoutExpired:
                    code = None
                diagnostics = (_tail(err) + "\n" + (log.read_text(errors="replace")
                                                    if log.exists() else "")).strip()
            self.unreachable = code != 0
            if code != 0:
                raise self._connect_error(code, diagnostics)
            self._connected_once = True

    def _connect_error(self, code: int | None, diagnostics: str) -> TargetError:
        host, s = self.params.host, self._settings_of()
        where = f"environment {self.name} ({host})"
        known_hosts = (s.get("userknownhostsfile") or "~/.ssh/known_hosts").split()[0]
        if "Host key verification failed" in diagnostics:
            if "CHANGED" in diagnostics or "has changed" in diagnostics:
                return TargetError(
                    f"the host key of {where} has CHANGED since it was recorded in known_hosts "
                    "(a reinstalled target, or someone in between): if you know why, remove the "
                    f"old key with `{_forget_key_command(s, known_hosts)}` and connect once by hand "
                    f"with `{self._by_hand()}` to check and record the new one.")
            return TargetError(
                f"the host key of {where} is not known (ssh verifies it and rtvbench never "
                f"prompts): connect once by hand with `{self._by_hand()}` and accept the key after "
                f"checking its fingerprint, or add it with `ssh-keyscan -p {s.get('port', '22')} "
                f"{s.get('hostname', host)} >> {known_hosts}` (check it!).")
        if "Permission denied" in diagnostics:
            return TargetError(
                f"ssh cannot log in to {where}: no key was accepted, and rtvbench never asks for a "
                "password; load your key into ssh-agent, name it with IdentityFile in your ssh "
                f"config, or install it there with `ssh-copy-id`; check with `{self._by_hand()} true`.")
        reason = "no answer within the connect timeout" if code is None else _last_line(diagnostics)
        message = (f"cannot connect to {where} over ssh: {reason}; check that "
                   f"`{self._by_hand()} true` works.")
        if self._connected_once:
            # It worked before: the target went away (rebooted, crashed, network down).
            return TargetLost(message, diagnostics)
        return TargetError(message)

    def close(self) -> None:
        """Stop the master connection and remove its control directory."""
        self.stop_master()
        shutil.rmtree(self.control_dir, ignore_errors=True)
        self.control_dir = None

    # -- plain commands (housekeeping) ---------------------------------------------

    def exec(self, script: str, stdin: IO[bytes] | None = None,
             timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
        """Run a short shell command there; TargetError when ssh itself fails."""
        self.connect()
        try:
            r = subprocess.run(self.client_argv(script), stdin=stdin or subprocess.DEVNULL,
                               capture_output=True, timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired:
            raise TargetError(f"`{script}` did not finish within {timeout:.0f} s in environment "
                              f"{self.name} ({self.params.host}); check the target.") from None
        if r.returncode == 255:
            raise TargetLost(f"the connection to environment {self.name} ({self.params.host}) was "
                             f"lost: {_last_line(r.stderr.decode(errors='replace'))}.",
                             r.stderr.decode(errors="replace"))
        return r

    def facts(self) -> dict[str, str]:
        if self._facts is None:
            r = self.exec("uname -m; uname -n")
            words = r.stdout.decode(errors="replace").split()
            if r.returncode != 0 or len(words) != 2:
                raise TargetError(f"`uname` failed in environment {self.name} ({self.params.host}): "
                                  f"{_last_line(r.stderr.decode(errors='replace'))}; rtvbench needs a "
                                  "POSIX shell with uname on the target.")
            self._facts = {"arch": words[0], "hostname": words[1]}
        return self._facts

    def resolved_host_address(self) -> str:
        """The numeric address of the host as ssh connects to it from here: `HostName` and
        `AddressFamily` of its effective settings, resolved on this machine."""
        s = self._settings_of()
        name = s.get("hostname") or self.params.host
        family = {"inet": socket.AF_INET, "inet6": socket.AF_INET6}.get(s.get("addressfamily", ""), 0)
        try:
            found = socket.getaddrinfo(name, None, family, socket.SOCK_STREAM)
        except socket.gaierror as e:
            raise TargetError(f"cannot resolve {name}, the host of environment {self.name}, to an "
                              f"address ({e.strerror}); check its name or HostName in the ssh config.") from None
        return found[0][4][0]


def _remove_dead_control_dirs(base: Path) -> None:
    """Control directories of runners of this user that were killed: their master connection is
    told to exit (it would linger for ControlPersist) and the directory goes."""
    for d in base.glob(f"{CONTROL_PREFIX}*-*"):
        pid = d.name[len(CONTROL_PREFIX):].partition("-")[0]
        try:
            mine = d.stat().st_uid == os.getuid()
        except OSError:
            continue
        if not (mine and pid.isdigit()) or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        if (d / "master").exists():
            try:
                subprocess.run(["ssh", "-o", f"ControlPath={d}/master", "-O", "exit", "--", "rtvbench-stale"],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(d, ignore_errors=True)


def _known_hosts_name(settings: dict[str, str]) -> str:
    host, port = settings.get("hostname", "HOST"), settings.get("port", "22")
    return host if port == "22" else f"[{host}]:{port}"


def _forget_key_command(settings: dict[str, str], known_hosts: str) -> str:
    """ssh-keygen -R for the file ssh really reads, quoted for a shell (a `[host]:port` name is a glob)."""
    command = f"ssh-keygen -R {shlex.quote(_known_hosts_name(settings))}"
    if known_hosts != "~/.ssh/known_hosts":
        command += f" -f {shlex.quote(known_hosts)}"
    return command
