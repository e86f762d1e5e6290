"""The `ssh` target: a machine reached with the system's OpenSSH client.

Using `ssh` itself (not a Python SSH library) means ~/.ssh/config, ProxyJump, keys and agents
work as they do for the user by hand. One master connection per environment is shared by
every command (ControlMaster, socket in a private temporary directory), so a command costs a
session, not a handshake. ssh never prompts (BatchMode) and host keys are always verified
with the user's own settings: rtvbench never weakens them.

Commands run under a small remote sh wrapper (ssh_wrapper.py) that gives them a process group,
forwards the signal requests written on ssh's stdin, and kills them when the connection goes.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import IO, Any, Callable, Optional

from pydantic import ValidationInfo, field_validator, model_validator

from rtvbench.probe import binary as probe
from rtvbench.errors import TargetError, TargetLost
from rtvbench.params import PositiveNumber, StrictModel
from rtvbench.procstat import mark_own, parse_process_stat
from rtvbench.targets.base import (TARGETS, Background, Completed, Target, drain_lines, drain_or_stop,
                                   kill_timer, pipe_drain)
from rtvbench.targets.ssh_wrapper import EXIT_MARK, remote_command, split_exit

STOP_GRACE_S = 2            # SIGTERM -> SIGKILL delay for loads (and on a lost connection)
CONNECT_TIMEOUT_S = 15      # default ConnectTimeout when the user's config sets none
# A dead peer (a board that hangs, a cable pulled) is noticed within interval x count seconds;
# generous, because a busy real-time target may answer late.
ALIVE_INTERVAL_S, ALIVE_COUNT = 10, 6
CONTROL_PERSIST_S = 300     # an idle master ends by itself, even if rtvbench was killed
COMMAND_TIMEOUT_S = 120     # short housekeeping commands (uname, mktemp, copying the probe)
BOOT_TIMEOUT_S = 300        # reboot_command -> the probe answers again: a slow board boots in minutes
# While the board goes down: how often the master connection's process is looked at (in /proc: no
# network), and how often, and how patiently, the board is asked for its boot_id through it.
DOWN_CHECK_S, BOOT_ID_EVERY_S, BOOT_ID_ANSWER_S = 0.05, 1.0, 3.0
LOGIN_RETRY_S = 0.2         # between login attempts while the board boots
BOOT_ID = "/proc/sys/kernel/random/boot_id"

# ssh options rtvbench sets itself: changing them would break connection sharing, make ssh
# prompt (and hang), or turn the command channel into something else.
_RESERVED = {"batchmode", "controlmaster", "controlpath", "controlpersist", "requesttty",
             "remotecommand", "sessiontype", "stdinnull", "forkafterauthentication"}
_HOST_KEY_VALUES = {"yes", "no", "off", "ask", "accept-new", "true", "false"}
_OPTION = re.compile(r"^([A-Za-z][A-Za-z0-9]*)=(\S.*)$", re.S)



class SshAccess(StrictModel):
    """How ssh reaches a board beyond its address: the keys the ssh and labgrid targets share."""

    ssh_config: Optional[str] = None
    options: list[str] = []
    workdir: Optional[str] = None

    @field_validator("ssh_config")
    @classmethod
    def _ssh_config(cls, v: str, info: ValidationInfo) -> str:
        base = Path((info.context or {}).get("base_dir") or Path.cwd())
        path = Path(v).expanduser()
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise ValueError(f"no such file: {path} (a relative path is taken from the campaign "
                             "file's directory); name an existing ssh config file")
        return str(path.resolve())

    @field_validator("options")
    @classmethod
    def _options(cls, v: list[str]) -> list[str]:
        for option in v:
            m = _OPTION.match(option)
            if not m:
                raise ValueError(f'each option must be "Key=Value" as after ssh -o, e.g. '
                                 f'"ConnectTimeout=5" (got "{option}")')
            key, value = m.group(1).lower(), m.group(2).strip().lower()
            if key in _RESERVED:
                raise ValueError(f'"{option}": rtvbench sets {m.group(1)} itself (connection '
                                 "sharing, never prompting); remove it")
            if key == "stricthostkeychecking" and value not in _HOST_KEY_VALUES:
                raise ValueError(f'"{option}": StrictHostKeyChecking must be one of yes, '
                                 "accept-new, ask, no")
        return v

    @field_validator("workdir")
    @classmethod
    def _workdir(cls, v: str) -> str:
        if not v.startswith("/") or "\n" in v:
            raise ValueError('must be an absolute directory on the target, e.g. "/tmp"')
        return v


class SshParams(SshAccess):
    host: str
    port: Optional[int] = None
    reboot_command: Optional[str] = None    # makes the environment power-cyclable (the `boot` kind)
    boot_timeout_s: Optional[PositiveNumber] = None     # default BOOT_TIMEOUT_S, with reboot_command only

    @field_validator("reboot_command")
    @classmethod
    def _reboot_command(cls, v: str) -> str:
        if not v.strip():
            raise ValueError('must be a shell command that reboots the target, e.g. "sudo reboot"')
        return v

    @model_validator(mode="after")
    def _timeout_needs_command(self):
        if self.boot_timeout_s is not None and self.reboot_command is None:
            raise ValueError("boot_timeout_s bounds a reboot, and this environment has no reboot_command: "
                             'add one (e.g. reboot_command = "sudo reboot") or drop boot_timeout_s')
        return self

    @field_validator("host")
    @classmethod
    def _host(cls, v: str) -> str:
        if not v or v != v.strip() or any(c.isspace() for c in v) or v.startswith("-"):
            raise ValueError('must be a destination as ssh takes it, e.g. "root@board" or a Host '
                             "alias of your ssh config, without spaces or a leading '-'")
        return v

    @field_validator("port")
    @classmethod
    def _port(cls, v: int) -> int:
        if isinstance(v, bool) or not 1 <= v <= 65535:
            raise ValueError("must be a TCP port number from 1 to 65535")
        return v


def _tail(f: IO[bytes], limit: int = 8000) -> str:
    # pread: ssh writes through the same open file, whose offset a seek here would move.
    size = os.fstat(f.fileno()).st_size
    start = max(0, size - limit)
    return os.pread(f.fileno(), size - start, start).decode("utf-8", "replace")


def _last_line(text: str) -> str:
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else "no message"


_live_targets: "weakref.WeakSet[SshTarget]" = weakref.WeakSet()
_running: set["SshBackground"] = set()


@atexit.register
def _clean_up() -> None:
    # Exit paths that skip the runner's finally blocks still stop every remote load and
    # close every master connection.
    for bg in list(_running):
        bg.stop()
    for target in list(_live_targets):
        target.close()


class _Session:
    """One wrapped remote command: the local ssh process and its request channel."""

    def __init__(self, target: "SshTarget", argv: list[str], stdout: Any, stderr: IO[bytes]) -> None:
        self.argv = argv
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            target._client_argv(remote_command(argv, STOP_GRACE_S)),
            stdin=subprocess.PIPE, stdout=stdout, stderr=stderr,
            # Ctrl-C at the terminal reaches rtvbench only: ssh dying of it would drop the
            # session before the probe could be asked to print its results.
            start_new_session=True)

    def request(self, what: str) -> None:
        """Ask the remote wrapper to signal the command (INT, TERM, KILL)."""
        with self._lock:
            try:
                self.proc.stdin.write(what.encode() + b"\n")
                self.proc.stdin.flush()
            except (OSError, ValueError):
                pass        # ssh has gone: the wrapper saw end of file and kills the group

    def hang_up(self) -> None:
        with self._lock:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def kill(self, wait_s: float = 3.0) -> None:
        """Kill the remote group, then let go of ssh; the wrapper kills on end of file too."""
        self.request("KILL")
        self.hang_up()
        try:
            self.proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class SshBackground(Background):
    """A load command under the remote wrapper.

    Without on_line, its stdout and stderr go to one temporary file (output_tail). With on_line,
    stdout is read line by line by a thread of ours, and stderr alone goes to the file."""

    READER_JOIN_S = 5.0

    def __init__(self, target: "SshTarget", argv: list[str],
                 on_line: Callable[[str], None] | None = None) -> None:
        self.argv = argv
        self._target = target
        self._err = tempfile.TemporaryFile()
        self._failure: str | None = None
        self._reader: threading.Thread | None = None
        self._session = _Session(target, argv, self._err if on_line is None else subprocess.PIPE,
                                 self._err)
        _running.add(self)
        if on_line is not None:
            self._reader = threading.Thread(target=self._read, args=(on_line,), daemon=True,
                                            name=f"ssh-load-output-{self._session.proc.pid}")
            self._reader.start()

    def _read(self, on_line: Callable[[str], None]) -> None:
        drain_lines(self._session.proc.stdout, on_line, self._failed)

    def _failed(self, why: str) -> None:
        self._failure = why

    def poll(self) -> int | None:
        if self._session.proc.poll() is None:
            return None
        status, _ = split_exit(_tail(self._err))
        # No status from the wrapper: the connection went (ssh's own 255).
        return status if status is not None else self._session.proc.returncode

    def stop(self) -> None:
        proc = self._session.proc
        if proc.poll() is None:
            self._session.request("TERM")
            try:
                proc.wait(STOP_GRACE_S + 1)
            except subprocess.TimeoutExpired:
                self._session.kill()
        self._session.hang_up()
        if self._reader is not None:
            # The command's last lines (a load's final window, result and end) are printed
            # while it stops; they are delivered before stop() returns.
            self._reader.join(self.READER_JOIN_S)
            self._reader = None
            proc.stdout.close()
        _running.discard(self)

    def output_tail(self) -> str:
        status, rest = split_exit(_tail(self._err))
        if status is None and self._session.proc.poll() is not None:
            rest = (rest + "\n" if rest else "") + f"(the connection to {self._target.params.host} was lost)"
        return rest

    def failure(self) -> str | None:
        return self._failure


@TARGETS.register("ssh")
class SshTarget(Target):
    kind = "ssh"
    Params = SshParams

    def __init__(self, name: str, params: SshParams) -> None:
        super().__init__(name, params)
        self._control_dir: str | None = None
        self._settings: dict[str, str] | None = None
        self._connected_once = False
        self._unreachable = False       # the last attempt to connect failed
        self._facts: dict[str, str] | None = None
        self._remote_dir: str | None = None
        self._probe_path: str | None = None
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
        if self._control_dir is None:
            # Socket paths are limited to ~100 bytes: keep it short whatever TMPDIR is.
            base = tempfile.gettempdir()
            base = base if len(base) < 60 else "/tmp"
            _remove_dead_control_dirs(Path(base))
            self._control_dir = tempfile.mkdtemp(prefix=f"{CONTROL_PREFIX}{os.getpid()}-", dir=base)
            _live_targets.add(self)
        s = self._settings_of()
        argv = self._common_argv() + ["-o", "BatchMode=yes",
                                      "-o", f"ControlPath={self._control_dir}/master"]
        # Defaults only where the user's own settings say nothing.
        if s.get("connecttimeout", "none") == "none":
            argv += ["-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"]
        if s.get("serveraliveinterval", "0") == "0":
            argv += ["-o", f"ServerAliveInterval={ALIVE_INTERVAL_S}",
                     "-o", f"ServerAliveCountMax={ALIVE_COUNT}"]
        return argv

    def _client_argv(self, command: str) -> list[str]:
        return [*self._base_argv(), "-o", "ControlMaster=no", "-T", "--", self.params.host, command]

    def _by_hand(self) -> str:
        """The command a user types to connect as rtvbench does."""
        return shlex.join([*self._common_argv(), self.params.host])

    # -- the master connection ------------------------------------------------

    def _master_pid(self) -> int | None:
        """The master connection's process id, or None when there is no working master."""
        if self._control_dir is None or not os.path.exists(f"{self._control_dir}/master"):
            return None
        r = subprocess.run([*self._base_argv(), "-O", "check", "--", self.params.host],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        m = re.search(r"pid=(\d+)", r.stderr)
        return int(m.group(1)) if r.returncode == 0 and m else None

    def _master_alive(self) -> bool:
        return self._master_pid() is not None

    def _stop_master(self) -> None:
        pid = self._master_pid()
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

    def _connect(self, timeout: float = CONNECT_TIMEOUT_S + 60) -> None:
        """Make sure the master connection is up; (re)establish it when not (giving up after
        `timeout` s: a board that does not answer at all)."""
        with self._connect_lock:
            if self._master_alive():
                return
            base = self._base_argv()      # creates the control directory
            log = Path(self._control_dir) / "master.log"
            log.unlink(missing_ok=True)
            # A socket left by a master that was killed would make the new one run unshared.
            (Path(self._control_dir) / "master").unlink(missing_ok=True)
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
            self._unreachable = code != 0
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

    # -- plain commands (housekeeping) ---------------------------------------------

    def _exec(self, script: str, stdin: IO[bytes] | None = None,
              timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
        """Run a short shell command there; TargetError when ssh itself fails."""
        self._connect()
        try:
            r = subprocess.run(self._client_argv(script), stdin=stdin or subprocess.DEVNULL,
                               capture_output=True, timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired:
            raise TargetError(f"`{script}` did not finish within {timeout:.0f} s in environment "
                              f"{self.name} ({self.params.host}); check the target.") from None
        if r.returncode == 255:
            raise TargetLost(f"the connection to environment {self.name} ({self.params.host}) was "
                             f"lost: {_last_line(r.stderr.decode(errors='replace'))}.",
                             r.stderr.decode(errors="replace"))
        return r

    def _remote_facts(self) -> dict[str, str]:
        if self._facts is None:
            r = self._exec("uname -m; uname -n")
            words = r.stdout.decode(errors="replace").split()
            if r.returncode != 0 or len(words) != 2:
                raise TargetError(f"`uname` failed in environment {self.name} ({self.params.host}): "
                                  f"{_last_line(r.stderr.decode(errors='replace'))}; rtvbench needs a "
                                  "POSIX shell with uname on the target.")
            self._facts = {"arch": words[0], "hostname": words[1]}
        return self._facts

    # -- the Target interface -------------------------------------------------

    def process_ticks(self) -> dict[str, list] | None:
        """Every process of the board from one `cat` of /proc/*/stat (a process that ends meanwhile
        only makes cat complain), marked as rtvbench's when it descends from one of the wrapper
        shells this target runs its commands under (their command line carries the exit mark)."""
        try:
            r = self._exec(f"grep -l {EXIT_MARK} /proc/[0-9]*/cmdline 2>/dev/null; echo @; "
                           "cat /proc/[0-9]*/stat 2>/dev/null")
        except TargetError:
            return None
        marked, _, stats = ("\n" + r.stdout.decode(errors="replace")).partition("\n@\n")
        roots = {path.split("/")[2] for path in marked.split() if path.count("/") == 3}
        out, parents = {}, {}
        for line in stats.splitlines():
            parsed = parse_process_stat(line)
            if parsed:
                pid, name, ticks, cpu, ppid = parsed
                out[pid] = [name, ticks, cpu]
                parents[pid] = ppid
        return mark_own(out, parents, roots) if out else None

    def deploy_probe(self) -> str:
        q = shlex.quote
        if self._probe_path is not None:
            # Again after a lost connection: reach the target, and deploy anew if it restarted
            # (and emptied /tmp) meanwhile.
            if self._exec(f"test -x {q(self._probe_path)}").returncode == 0:
                return self._probe_path
            self._probe_path = self._remote_dir = None
        arch = self._remote_facts()["arch"]
        local = probe.probe_for_arch(arch)
        parent = self.params.workdir or "/tmp"
        self._remove_dead_runners_probes(parent)
        r = self._exec(f"mktemp -d {q(parent.rstrip('/') or '/')}/{_remote_prefix()}{os.getpid()}.XXXXXX")
        where = f"environment {self.name} ({self.params.host})"
        if r.returncode != 0:
            raise TargetError(f"cannot create a directory in {parent} in {where}: "
                              f"{_last_line(r.stderr.decode(errors='replace'))}; set `workdir` to a "
                              "writable directory there.")
        self._remote_dir = r.stdout.decode().strip()
        dest = f"{self._remote_dir}/rtvb-probe"
        self._copy_probe(local, dest)
        self._probe_path = dest
        return dest

    def _copy_probe(self, local: Path, dest: str) -> None:
        """Copy the probe to `dest` (making its directory if a reboot removed it) and check that it
        runs there."""
        where = f"environment {self.name} ({self.params.host})"
        parent = self.params.workdir or "/tmp"
        # One session: copy, check the size, check that it runs (exit 90: copying failed, 91: the
        # copy does not run).
        with open(local, "rb") as f:
            r = self._exec(f"f={shlex.quote(dest)}; mkdir -p -- \"${{f%/*}}\" && cat > \"$f\" && "
                           "chmod 755 \"$f\" && wc -c < \"$f\" || exit 90; "
                           "\"$f\" --version >/dev/null || exit 91", stdin=f)
        problem = _last_line(r.stderr.decode(errors="replace"))
        if r.returncode == 91:
            raise TargetError(f"the probe copied to {dest} does not run in {where} ({problem}); if "
                              f"{parent} is mounted noexec, set `workdir` to a directory that allows "
                              "programs.")
        if r.returncode != 0 or r.stdout.decode().split() != [str(local.stat().st_size)]:
            raise TargetError(f"copying the probe to {dest} in {where} failed ({problem}); check the "
                              "free space there, or set `workdir` to another directory.")

    def _remove_dead_runners_probes(self, parent: str) -> None:
        """Probe copies that runners of this machine left in `parent` when they were killed (SIGKILL
        leaves no time to clean up): their directories name the runner's process, which is gone."""
        prefix = _remote_prefix()
        r = self._exec(f"cd {shlex.quote(parent)} 2>/dev/null && for d in {prefix}*.*; do "
                       "[ -d \"$d\" ] && printf '%s\\n' \"$d\"; done; true")
        stale = []
        for name in r.stdout.decode(errors="replace").split():
            pid = name[len(prefix):].partition(".")[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                stale.append(f"{parent.rstrip('/')}/{name}")
        if stale:
            self._exec("rm -rf -- " + " ".join(shlex.quote(d) for d in stale), timeout=60)

    def run(self, argv: list[str], on_line: Callable[[str], None]) -> Completed:
        self._connect()
        with tempfile.TemporaryFile() as err:
            session = _Session(self, argv, subprocess.PIPE, err)
            proc = session.proc
            try:
                _, interrupted = drain_or_stop(pipe_drain(proc.stdout, on_line), lambda: session.request("INT"),
                                               kill_timer(session.kill))
                proc.wait()
            finally:
                if proc.poll() is None:
                    session.kill()      # on_line failed, or a second Ctrl-C
                session.hang_up()
                proc.stdout.close()
            status, stderr = split_exit(_tail(err))
        if status is None:
            if interrupted:
                return Completed(proc.returncode, stderr, True)
            log = f"ssh exited with status {proc.returncode}; its diagnostics and the command's " \
                  f"stderr:\n{stderr or '(none)'}"
            raise TargetLost(f"the connection to environment {self.name} ({self.params.host}) was "
                             f"lost while `{shlex.join(argv[:2])}` ran; it is re-established for "
                             "the next command.", log)
        return Completed(status, stderr, interrupted)

    def start_background(self, argv: list[str],
                         on_line: Callable[[str], None] | None = None) -> Background:
        self._connect()
        return SshBackground(self, argv, on_line)

    def read_file(self, path: str) -> str:
        # A plain command: no wrapper needed for a `cat` that cannot hang.
        r = self._exec(f"cat -- {shlex.quote(path)}")
        if r.returncode != 0:
            raise TargetError(f"cannot read {path} in environment {self.name} "
                              f"({_last_line(r.stderr.decode(errors='replace'))}).")
        return r.stdout.decode("utf-8", "replace")

    # -- rebooting the board (the `boot` kind) -----------------------------------------

    @property
    def can_power_cycle(self) -> bool:      # type: ignore[override]
        return self.params.reboot_command is not None

    @property
    def not_power_cycled_as(self) -> str:
        return "a ssh target without reboot_command"

    def power_cycle(self, hard: bool = False) -> dict[str, Any]:
        """Reboot the board with its reboot_command and time it until the probe answers again.

        Every time is counted on this machine from the moment the command is sent: `down_ns` when
        the board went away (its side closed our master connection, or it stopped answering through
        it), `login_ns` at the first new ssh login, `total_ns` when the probe (copied again if the
        reboot emptied its directory) answered `--version`. The board's /proc/uptime read with that
        answer places the start of its new kernel's clock: `to_kernel_ns` and `from_kernel_ns`, only
        where that lies between going down and the login (else the clocks do not line up). The
        boot_id read before and after tells a reboot from a connection that merely dropped."""
        p = self.params
        if p.reboot_command is None:
            return super().power_cycle(hard)
        if hard:
            raise TargetError(f"environment {self.name} is an ssh target, rebooted by its reboot_command: it "
                              'cannot be killed as a crash would; use action = "reboot".')
        timeout_s = p.boot_timeout_s or BOOT_TIMEOUT_S
        probe_path = self._probe_path or self.deploy_probe()
        before = self.boot_id()
        master = self._master_pid()
        with tempfile.TemporaryFile() as err:
            t0 = time.monotonic_ns()
            deadline = t0 / 1e9 + timeout_s
            reboot = subprocess.Popen(self._client_argv(p.reboot_command), stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
            try:
                down = self._wait_down(reboot, err, master, before, deadline, timeout_s)
                # A master stuck on a board that vanished without closing it goes the hard way.
                self._stop_master()
                return self.come_back(
                    t0, down, before, probe_path, deadline,
                    f"boot_timeout_s ({timeout_s:g} s) of its reboot_command (which took it down in "
                    f"{(down - t0) / 1e9:.1f} s)",
                    f"its connection dropped {(down - t0) / 1e9:.1f} s after the reboot_command "
                    f"`{p.reboot_command}`, but it answered again with the same boot_id ({before}), so the "
                    "command ended the ssh connection without rebooting the board")
            finally:
                if reboot.poll() is None:
                    reboot.kill()       # its session went with the old boot; ssh may not know yet
                reboot.wait()

    def forget_connection(self) -> None:
        """Drop the master connection to a board that was switched off (killed if it hangs on the
        dead peer), keeping what is known of it: the probe's path, its facts."""
        self._stop_master()

    def come_back(self, sent: int, down: int, before: str, probe_path: str, deadline: float,
                  within: str, not_rebooted: str) -> dict[str, Any]:
        """The second half of a timed boot, once the board went down (monotonic ns `sent` and
        `down`; its master connection stopped): log in again as soon as it lets us (by `deadline`,
        else "did not come back within <within>"), check that its boot_id is new (else "did not
        reboot: <not_rebooted>"), copy the probe back if the boot removed it, and the phases once
        it answers."""
        login = self._wait_login(deadline, within)
        # One session for both: every session counts in the boot time.
        r = self._exec(f"cat {BOOT_ID} && {{ test -x {shlex.quote(probe_path)} || echo missing; }}")
        after, _, missing = r.stdout.decode(errors="replace").strip().partition("\n")
        if after == before:
            raise TargetError(f"environment {self.name} ({self.params.host}) did not reboot: {not_rebooted}.")
        if missing:
            # The reboot emptied its directory (a /tmp on tmpfs): back to the same path, which the
            # runner's command line names.
            self._copy_probe(probe.probe_for_arch(self._remote_facts()["arch"]), probe_path)
        r = self._exec(f"{shlex.quote(probe_path)} --version >/dev/null && cat /proc/uptime")
        ready = time.monotonic_ns()
        words = r.stdout.decode(errors="replace").split()
        if r.returncode != 0 or not words:
            raise TargetError(f"the probe {probe_path} does not run in environment {self.name} "
                              f"({self.params.host}) after its reboot: "
                              f"{_last_line(r.stderr.decode(errors='replace'))}.")
        return boot_phases(sent, down, login, ready, float(words[0])) | {"probe_redeployed": bool(missing)}

    def boot_id(self) -> str:
        """The board's boot_id: a new one at every boot."""
        r = self._exec(f"cat {BOOT_ID}")
        boot_id = r.stdout.decode(errors="replace").strip()
        if r.returncode != 0 or not boot_id:
            raise TargetError(f"environment {self.name} ({self.params.host}) has no readable {BOOT_ID} "
                              f"({_last_line(r.stderr.decode(errors='replace'))}), by which rtvbench tells "
                              "that it rebooted; its boot cannot be timed.")
        return boot_id

    def _ask_boot_id(self, patience_s: float) -> str | None:
        """The boot_id through the master connection, or None when it does not answer in time."""
        try:
            r = subprocess.run(self._client_argv(f"cat {BOOT_ID}"), stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=patience_s, start_new_session=True)
        except subprocess.TimeoutExpired:
            return None
        return r.stdout.decode(errors="replace").strip() if r.returncode == 0 else None

    def _wait_down(self, reboot: subprocess.Popen, err: IO[bytes], master: int | None, before: str,
                   deadline: float, timeout_s: float) -> int:
        """When the board went away: monotonic ns at which its master connection was found closed
        (a rebooting system stops sshd and its sessions), or at which a boot_id request through it
        went unanswered (a board that vanished without closing it: the connection stays open on
        our side until ServerAlive gives up)."""
        p = self.params
        next_ask = time.monotonic() + BOOT_ID_EVERY_S
        while True:
            now = time.monotonic_ns()
            if master is None or not _alive(master):
                return now
            status = reboot.poll()
            if status not in (None, 0, 255) and _alive(master):
                raise TargetError(f"the reboot_command of environment {self.name} ({p.host}), "
                                  f"`{p.reboot_command}`, exited with status {status} "
                                  f"({_last_line(_tail(err))}) and the board stays up; run it there by hand "
                                  "(sudo must be allowed to run it without a password).")
            if time.monotonic() >= deadline:
                raise TargetError(f"environment {self.name} ({p.host}) did not reboot: it stayed connected, "
                                  f"with the same boot_id, for boot_timeout_s ({timeout_s:g} s) after its "
                                  f"reboot_command `{p.reboot_command}`; run that command there by hand to "
                                  "see why it does not reboot the board.")
            if time.monotonic() >= next_ask:
                answer = self._ask_boot_id(BOOT_ID_ANSWER_S)
                if answer is None or answer != before:
                    return now
                next_ask = time.monotonic() + BOOT_ID_EVERY_S
            time.sleep(DOWN_CHECK_S)

    def _wait_login(self, deadline: float, within: str) -> int:
        """Monotonic ns of the first ssh login that works again (a new master connection)."""
        while True:
            try:
                self._connect(timeout=max(1.0, deadline - time.monotonic()))
                return time.monotonic_ns()
            except TargetError as e:
                last = str(e).rstrip(".")
            if time.monotonic() >= deadline:
                raise TargetError(f"environment {self.name} ({self.params.host}) did not come back within "
                                  f"{within}: no ssh login has worked since (the last attempt: {last}).")
            time.sleep(LOGIN_RETRY_S)

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

    reaches = ("local", "ssh")

    def round_trip_address(self, peer: Target) -> str:
        if peer is self:
            return "127.0.0.1"
        if peer.kind == "ssh":
            # Another board: where ssh reaches it from here, assumed reachable from this one too.
            return peer.resolved_host_address()
        if peer.kind == "local":
            # This machine as the board sees it: the source address of our ssh connection (behind a
            # ProxyJump or NAT that is the last hop's address, which then has to forward the port).
            r = self._exec('printf "%s\\n" "$SSH_CONNECTION"')
            words = r.stdout.decode(errors="replace").split()
            if r.returncode != 0 or not words:
                raise TargetError(f"environment {self.name} ({self.params.host}) does not say where the "
                                  "ssh connection comes from ($SSH_CONNECTION is empty), so it cannot "
                                  "reach this machine for round trips; drop `peer` from the ipc benchmark.")
            return words[0].removeprefix("::ffff:") if "." in words[0] else words[0]
        return super().round_trip_address(peer)

    def describe(self) -> dict[str, Any]:
        facts = self._remote_facts()
        return {"target": "ssh", "host": self.params.host, "arch": facts["arch"],
                "hostname": facts["hostname"]}

    def close(self) -> None:
        if self._control_dir is None:
            return
        # Reconnect to clean up after a dropped connection, unless the target was found
        # unreachable already (no second connect timeout on the way out).
        if self._remote_dir is not None and not self._unreachable:
            try:
                self._exec(f"rm -rf -- {shlex.quote(self._remote_dir)}", timeout=30)
            except TargetError:
                pass        # the target is gone: nothing more to do there
        self._stop_master()
        shutil.rmtree(self._control_dir, ignore_errors=True)
        self._control_dir = None
        self._remote_dir = self._probe_path = None
        _live_targets.discard(self)


def boot_phases(sent: int, down: int, login: int, ready: int, uptime_s: float) -> dict[str, float]:
    """A board's reboot in ns from the monotonic times (ns, this machine) at which the reboot command
    was sent, the board went down, a login worked and the probe answered, and the board's uptime
    read with that answer. Its kernel's clock started uptime before the answer: that splits the
    boot where it lies between going down and the login; else (a clock that kept running, a board
    that did not really power off) the split is left out rather than made up."""
    out = {"total_ns": ready - sent, "down_ns": down - sent, "login_ns": login - sent,
           "uptime_ns": uptime_s * 1e9}
    kernel_at = ready - uptime_s * 1e9
    if down <= kernel_at <= login:
        out["to_kernel_ns"] = kernel_at - sent
        out["from_kernel_ns"] = ready - kernel_at
    return out


#: a runner's local directory of its master connection: rtvb-ssh-<pid>-XXXXXXXX
CONTROL_PREFIX = "rtvb-ssh-"


def _remote_prefix() -> str:
    """The start of the probe directories that runners of this machine make on a target:
    rtvb.<this machine>.<pid>.XXXXXX, so that a later runner here can tell a dead runner's copy."""
    host = hashlib.sha1(socket.gethostname().encode()).hexdigest()[:8]
    return f"rtvb.{host}."


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


def _alive(pid: int) -> bool:
    """Whether a process runs (an exited one that its parent did not reap yet does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        pass
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _known_hosts_name(settings: dict[str, str]) -> str:
    host, port = settings.get("hostname", "HOST"), settings.get("port", "22")
    return host if port == "22" else f"[{host}]:{port}"


def _forget_key_command(settings: dict[str, str], known_hosts: str) -> str:
    """ssh-keygen -R for the file ssh really reads, quoted for a shell (a `[host]:port` name is a glob)."""
    command = f"ssh-keygen -R {shlex.quote(_known_hosts_name(settings))}"
    if known_hosts != "~/.ssh/known_hosts":
        command += f" -f {shlex.quote(known_hosts)}"
    return command


