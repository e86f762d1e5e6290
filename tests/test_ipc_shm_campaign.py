"""ipc over shared memory between environments (`transports = ["shm"]` with `peer`): two local
environments through a file the server creates; this machine <-> a TCG x86_64 guest and guest <->
guest through one region (`shm = "NAME"` on both qemu environments: QEMU's ivshmem-plain over a
file in /dev/shm that rtvbench creates and removes); campaign errors for a shm peer between
environments that share no region, and for two sizes of one region.

Every client result must be `verified` (sequence numbers, the checksum and the payload of every
message in both directions) with the requested count at each size, read from the store's raw
records. Under TCG the guest figures measure an emulator, and on this machine a round trip through
shared memory may take under 100 ns: the check on the figures is only that they are round trips
(more than nothing, a median under a second).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from host_helpers import cli_env, run_cli
from rtvbench.store import load_run, open_store

# The timeout is a hang guard: a campaign boots two TCG guests, which takes minutes on a loaded machine.
pytestmark = [pytest.mark.functional, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parent.parent
KERNEL = REPO / "kernels" / "x86_64" / "vmlinuz"
SHM = Path("/dev/shm")


def _run(tmp_path: Path, probe: Path, text: str):
    (tmp_path / "c.toml").write_text(text)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=900)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    # Every region file of the run is gone. Its files are named after the runner's pid (rtvb-PID-...),
    # as the paths in its commands show: other tests' runs beside this one have files of their own.
    paths = [m.command[i + 1] for m in run.measurements for i, a in enumerate(m.command) if a == "--shm-path"]
    [runner] = {re.fullmatch(rf"{SHM}/rtvb-(\d+)-.+", p).group(1) for p in paths}
    assert sorted(p.name for p in SHM.glob(f"rtvb-{runner}-*")) == []
    return run


def _check(m, sizes: list[int], count: int, client_args: list[str]) -> dict[int, tuple[int, int]]:
    """The measurement's client results are verified, complete and the size of the request; the
    (min, median) round trip by size."""
    assert m.status == "ok", m.error
    argv = m.command[1:]
    assert argv[:4] == ["ipc", "--connect", "shm", "--transport"] and argv[4] == "shm"
    assert argv[5:5 + len(client_args)] == client_args, argv
    res = [r for r in m.results if r.get("role") == "client"]
    assert [r["size_bytes"] for r in res] == sizes
    for r in res:
        assert r["transport"] == "shm" and r["verified"] is True and r["complete"] is True
        assert r["count"] == count and "corruption" not in r
        assert 0 < r["min_ns"] <= r["p50_ns"] < 1e9
    return {r["size_bytes"]: (r["min_ns"], r["p50_ns"]) for r in res}


def _campaign(envs: str, peer: str, extra: str = "") -> str:
    """Environments `native` (this machine) and `envs`; benchmark rtt: shm round trips to `peer`."""
    return (f'name = "shm"\n[environments.native]\ntarget = "local"\n{envs}\n'
            f'[benchmarks.rtt]\nkind = "ipc"\ntransports = ["shm"]\npeer = "{peer}"\n{extra}')


def test_two_local_environments_through_a_file_the_server_creates(tmp_path, probe):
    run = _run(tmp_path, probe, _campaign('[environments.partner]\ntarget = "local"', "partner",
                                          "sizes = [16, 4096, 65536]\ncount = 500\n"))
    assert len(run.measurements) == 2
    for m in run.measurements:
        path = m.command[m.command.index("--shm-path") + 1]
        assert path.startswith(f"{SHM}/rtvb-") and "-ipc-rtt-" in path
        _check(m, [16, 4096, 65536], 500, ["--shm-path", path])


def _guest(name: str, region: str) -> str:
    return f'''
[environments.{name}]
target = "qemu"
arch = "x86_64"
kernel = "{KERNEL}"
accel = "tcg"
memory_mb = 256
shm = "{region}"
# Hang guards only: TCG guests boot in seconds on a quiet machine, in a minute or more on a busy one.
boot_timeout_s = 600
hang_timeout_s = 120
'''


@pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None or not KERNEL.is_file(),
                    reason="needs qemu-system-x86_64 and kernels/x86_64/vmlinuz (make kernels)")
def test_host_guest_and_guest_guest_through_one_ivshmem_region(tmp_path, probe):
    sizes = [16, 1024, 65536]
    # rtt: servers in guest g2; back: servers on this machine, clients in the guests.
    run = _run(tmp_path, probe, _campaign(_guest("g1", "r") + _guest("g2", "r"), "g2",
                                          f"sizes = {sizes}\ncount = 200\nwarmup = 10\n"
                                          '[benchmarks.back]\nkind = "ipc"\ntransports = ["shm"]\n'
                                          'peer = "native"\nsizes = [16, 65536]\ncount = 100\n'))
    back = {m.environment: m for m in run.measurements if m.benchmark == "back"}
    assert set(back) == {"native", "g1", "g2"}
    for env in ("g1", "g2"):            # the guest is the client, the host serves from the file
        _check(back[env], [16, 65536], 100, ["--shm-pci", "auto"])
    _check(back["native"], [16, 65536], 100, back["native"].command[6:8])
    cells = {m.environment: m for m in run.measurements if m.benchmark == "rtt"}
    assert set(cells) == {"native", "g1", "g2"}
    # This machine maps the file behind the guests' device; the guests map the device's BAR2.
    host_file = cells["native"].command[cells["native"].command.index("--shm-path") + 1]
    assert host_file.startswith(f"{SHM}/rtvb-") and host_file.endswith("-r")
    figures = {
        "host <-> guest": _check(cells["native"], sizes, 200, ["--shm-path", host_file]),
        "guest <-> guest": _check(cells["g1"], sizes, 200, ["--shm-pci", "auto"]),
        "guest loopback": _check(cells["g2"], sizes, 200, ["--shm-pci", "auto"]),
    }
    figures["guest -> host server"] = _check(back["g1"], [16, 65536], 100, ["--shm-pci", "auto"])
    print({k: {s: f"{a / 1e3:.1f}/{b / 1e3:.1f} us" for s, (a, b) in v.items()} for k, v in figures.items()})


@pytest.mark.parametrize("guests,peer,expected", [
    # A guest without a region cannot exchange shm messages with anyone.
    (_guest("g1", "a").replace('shm = "a"\n', ""), "g1", "environments native and g1 share no shm region"),
    # Two guests with different regions share nothing.
    (_guest("g1", "a") + _guest("g2", "b"), "g2", "environments g1 and g2 share no shm region"),
    # One region, two sizes.
    (_guest("g1", "a") + _guest("g2", "a") + "shm_size_mb = 8\n", "g1",
     'environments.g2.shm_size_mb: environment g1 gives shm region "a" 4 MiB, this one 8'),
    (_guest("g1", "a") + "shm_size_mb = 3\n", "g1", "must be a power of two from 1 to 1024"),
    # 1 MiB carries 524032 bytes each way: a 1 MiB message does not fit.
    (_guest("g1", "a") + "shm_size_mb = 1\n", "g1|sizes = [16, 1048576]",
     'benchmarks.rtt.sizes: 1048576-byte messages do not fit shm region "a" of environment g1 (1 MiB: at '
     "most 524032 bytes each way)"),
])
def test_a_shm_peer_without_a_shared_region_is_a_campaign_error(tmp_path, probe, guests, peer, expected):
    kernel = KERNEL
    if not kernel.is_file():
        kernel = tmp_path / "vmlinuz"
        kernel.write_bytes(b"\0" * 64)
    peer, _, extra = peer.partition("|")     # "ENV|more keys of the benchmark"
    (tmp_path / "c.toml").write_text(_campaign(guests.replace(str(KERNEL), str(kernel)), peer, extra + "\n"))
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 2, r.stderr
    line = next((line for line in r.stderr.splitlines() if expected in line), None)
    assert line is not None, r.stderr
    assert line.count(". ") == 0           # one sentence


def test_no_region_file_is_left_by_a_closed_environment():
    from rtvbench.targets import shm
    path = shm.hold("t1", 1 << 20)
    assert path.stat().st_size == 1 << 20 and re.fullmatch(rf"rtvb-{os.getpid()}-[0-9a-f]{{16}}-t1", path.name)
    assert path.stat().st_mode & 0o777 == 0o600
    assert shm.hold("t1", 1 << 20) == path           # a second environment shares it
    shm.release("t1")
    assert path.exists()
    shm.release("t1")
    assert not path.exists()
