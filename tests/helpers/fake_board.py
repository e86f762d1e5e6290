"""A fake board for the ssh target's reboot tests: the test sshd (helpers/sshd.py) that a
`reboot_command` switches off and back on after a known delay, with a boot of its own.

Its sessions run this machine's programs, but each in a mount namespace in which
/proc/sys/kernel/random/boot_id and /proc/uptime are the board's (bind mounts of files this helper
writes): the ssh target reads the real paths, as on a real board, and nothing in rtvbench knows it
is a test. Needs root (unshare and mount).

The reboot command is `touch <root>/reboot`; a thread of the test sees the file and "reboots":
it stops the sshd (every connection dropped), waits, starts the board's new kernel clock (new
boot_id, uptime counted from then), waits `kernel_s` more and starts the sshd again. What the
board's `workdir` held is gone after it, as a /tmp on tmpfs would be. Or a power switch (the
labgrid lab's PowerSwitch) calls switch_off and switch_on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from helpers.sshd import Sshd

_SESSION = r"""#!/bin/sh
# One session of the fake board: this machine, with the board's boot_id and uptime.
b={root}
u=$(mktemp "$b/uptime.XXXXXX")
awk -v at="$(cat "$b/booted_at")" '{{printf "%.2f 0.00\n", $1 - at}}' /proc/uptime > "$u"
exec unshare --mount sh -c 'mount --bind "$1" /proc/sys/kernel/random/boot_id &&
  mount --bind "$2" /proc/uptime && rm -f "$2" && exec sh -c "$SSH_ORIGINAL_COMMAND"' sh "$b/boot_id" "$u"
"""


def available() -> str | None:
    """Why the fake board cannot run here, or None."""
    if os.geteuid() != 0:
        return "the fake board's sessions need root (unshare --mount, mount --bind)"
    if shutil.which("unshare") is None or shutil.which("awk") is None:
        return "the fake board needs unshare (util-linux) and awk"
    r = subprocess.run(["unshare", "--mount", "true"], capture_output=True)
    return None if r.returncode == 0 else f"unshare --mount fails here: {r.stderr.decode().strip()}"


def _machine_uptime() -> float:
    return float(Path("/proc/uptime").read_text().split()[0])


@dataclass
class Reboot:
    """One reboot as the board lived it, in this machine's monotonic seconds."""

    requested: float        # the request file was seen
    kernel: float | None = None     # the new boot's clock started
    up: float | None = None         # sshd listened again


@dataclass
class FakeBoard:
    root: Path
    off_s: float = 1.5          # request seen -> sshd listening again (the delay D)
    kernel_s: float = 0.5       # the new kernel's clock started this long before sshd listens
    mode: str = "reboot"        # "reboot", "same-id" (back without a new boot), "dead" (never back)
    reboots: list[Reboot] = field(default_factory=list)
    switched_on: list[float] = field(default_factory=list)     # monotonic s of each switch_on()

    def start(self) -> "FakeBoard":
        self.root.mkdir(parents=True, exist_ok=True)
        self.workdir = self.root / "tmp"
        self.workdir.mkdir()
        self._new_boot()
        session = self.root / "session.sh"
        session.write_text(_SESSION.format(root=self.root))
        session.chmod(0o755)
        self.sshd = Sshd(self.root / "sshd", extra_config=f"ForceCommand {session}\n").start()
        self.request = self.root / "reboot"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="fake board")
        self._thread.start()
        return self

    @property
    def reboot_command(self) -> str:
        return f"touch {self.request}"

    @property
    def boot_id(self) -> str:
        return (self.root / "boot_id").read_text().strip()

    def _new_boot(self) -> None:
        (self.root / "boot_id").write_text(f"{uuid.uuid4()}\n")
        (self.root / "booted_at").write_text(f"{_machine_uptime():.2f}\n")

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            if not self.request.exists():
                continue
            event = Reboot(time.monotonic())
            self.reboots.append(event)
            self.request.unlink()
            self.sshd.stop()
            if self.mode == "dead":
                continue
            self._wipe()
            time.sleep(max(0.0, event.requested + self.off_s - self.kernel_s - time.monotonic()))
            if self.mode == "reboot":
                self._new_boot()
                event.kernel = time.monotonic()
            time.sleep(max(0.0, event.requested + self.off_s - time.monotonic()))
            self.sshd.launch()
            event.up = time.monotonic()

    def _wipe(self) -> None:
        for child in self.workdir.iterdir():
            shutil.rmtree(child, ignore_errors=True)

    # A power switch (the labgrid lab's) instead of the reboot command:

    def switch_off(self) -> None:
        """Power gone: every connection dropped, /tmp emptied."""
        self.sshd.stop()
        self._wipe()

    def switch_on(self) -> None:
        """Power back: a new boot whose kernel clock starts now, sshd listening kernel_s later."""
        self._new_boot()
        self.switched_on.append(time.monotonic())
        time.sleep(self.kernel_s)
        self.sshd.launch()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sshd.stop()


def boots(run, label: str) -> list[tuple[dict[str, float], dict]]:
    """Each measurement of a run of boots, in order, as (its `_ns` figures in seconds, its result);
    all must be ok. The figures are printed: they are the numbers a test measured."""
    out = []
    for m in sorted(run.measurements, key=lambda m: m.repetition):
        assert m.status == "ok", m.error
        (res,) = m.results
        seconds = {k[:-3]: v / 1e9 for k, v in res.items() if k.endswith("_ns")}
        print(f"{label}:", ", ".join(f"{k} {v:.2f} s" for k, v in seconds.items()))
        out.append((seconds, res))
    return out
