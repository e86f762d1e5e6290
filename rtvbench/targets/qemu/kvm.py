"""Can QEMU run a KVM guest here? Answered by running one, not by looking at /dev/kvm.

/dev/kvm can exist, create VMs and even run a few real-mode instructions while QEMU still
cannot run a guest with it: nested virtualisation switched off, a paravirtual KVM flavour
that rejects the MSRs QEMU sets, a sandbox that filters ioctls. So the check starts the very
QEMU binary, machine and CPU model the guest would use, with a 64 KiB firmware of a few
instructions that powers the machine off at once, and looks at how QEMU ended.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from rtvbench import run_files

TIMEOUT_S = 15.0
#: x86: at the reset vector, `mov al, 0x21; out 0xf4, al` to an isa-debug-exit device, which
#: makes QEMU exit with status (0x21 << 1) | 1.
X86_CODE = bytes.fromhex("b021e6f4f4")
X86_STATUS = 0x43
#: arm64: at address 0, PSCI SYSTEM_OFF (function 0x84000008) through hvc, the conduit KVM
#: implements; QEMU then exits with status 0. `b .` after it, should the call return.
ARM64_CODE = b"".join(w.to_bytes(4, "little") for w in (0xD2800100, 0xF2B08000, 0xD4000002, 0x14000000))

_cache: dict[tuple, str | None] = {}
#: present when the host's KVM is the PVM flavour: it runs guest kernels built for PVM only, and an
#: ordinary kernel passes the firmware check (real mode) and then stops at its first 64-bit steps
#: with an internal error, QEMU paused instead of exiting
PVM_MODULE = Path("/sys/module/kvm_pvm")


def _firmware(arch: str) -> bytes:
    if arch == "x86_64":
        image = bytearray(b"\xf4" * 65536)          # hlt everywhere else
        image[0xFFF0:0xFFF0 + len(X86_CODE)] = X86_CODE
        return bytes(image)
    return ARM64_CODE + b"\0" * (65536 - len(ARM64_CODE))


def kvm_problem(qemu: str, arch: str, machine: list[str]) -> str | None:
    """Why `qemu` cannot run an `arch` guest with KVM here, or None when it can.
    `machine` is the -M/-cpu part of the guest's command line. The answer is cached."""
    key = (qemu, arch, tuple(machine))
    if key in _cache:
        return _cache[key]
    if not os.path.exists("/dev/kvm"):
        result: str | None = "there is no /dev/kvm"
    elif PVM_MODULE.exists():
        result = "the host's KVM is the PVM flavour (kvm_pvm), which runs only guest kernels built for it"
    elif not os.access("/dev/kvm", os.R_OK | os.W_OK):
        result = "/dev/kvm is not readable and writable by this user (add it to the kvm group)"
    else:
        result = _try(qemu, arch, machine)
    _cache[key] = result
    return result


def _try(qemu: str, arch: str, machine: list[str]) -> str | None:
    with run_files.temporary_dir("rtvb-kvm-") as tmp:
        fw = Path(tmp) / "fw.bin"
        fw.write_bytes(_firmware(arch))
        argv = [qemu, "-accel", "kvm", *machine, "-nodefaults", "-display", "none", "-no-reboot",
                "-bios", str(fw)]
        if arch == "x86_64":
            argv += ["-device", "isa-debug-exit,iobase=0xf4,iosize=4"]
        expected = X86_STATUS if arch == "x86_64" else 0
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"a test guest under KVM did not finish within {TIMEOUT_S:g} s"
        except OSError as e:
            return f"{qemu} cannot be started ({e.strerror})"
    if done.returncode == expected:
        return None
    why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return f"a test guest under KVM failed ({why[:200]})"
