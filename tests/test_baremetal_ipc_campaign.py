"""ipc between the bare-metal image and Linux in a campaign: a partition (`image = "bare-metal"`) and a Linux
aarch64 guest with the same `shm = "NAME"` share one region, QEMU's ivshmem-plain device in both, and the
partition is the client of a server in the guest and of one on this machine (which maps the region's file).
Validate refuses, in one sentence, an ipc the image cannot do. Under TCG the round trips are emulation: the
checks are counts, integrity and the records the store and the report keep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baremetal_console import build_images
from host_helpers import cli_env, run_cli
from rtvbench.analysis.histogram import result_histogram
from rtvbench.store import load_run, open_store

REPO = Path(__file__).resolve().parent.parent
KERNEL = REPO / "kernels" / "aarch64" / "vmlinuz"
SIZES, COUNT = [16, 4096, 65536], 50

pytestmark = [pytest.mark.qemu, pytest.mark.functional]


@pytest.fixture(scope="module")
def image() -> None:
    build_images("qemu-system-aarch64", "aarch64-linux-gnu-gcc")


def _campaign(benchmarks: str, partition: str = 'shm = "r"', linux: bool = True) -> str:
    guest = (f'[environments.linux]\ntarget = "qemu"\narch = "aarch64"\nkernel = "{KERNEL}"\nshm = "r"\n'
             "boot_timeout_s = 600\nhang_timeout_s = 120\n") if linux else ""
    return (f'name = "partition-ipc"\n[environments.native]\ntarget = "local"\n{guest}'
            f'[environments.bm]\ntarget = "qemu"\narch = "aarch64"\nimage = "bare-metal"\n{partition}\n'
            f"{benchmarks}")


def _ipc(name: str, peer: str, extra: str = "") -> str:
    return (f'[benchmarks.{name}]\nkind = "ipc"\npeer = "{peer}"\ntransports = ["shm"]\n'
            f"sizes = {SIZES}\ncount = {COUNT}\nwarmup = 5\n{extra}\n")


@pytest.mark.timeout(1200)          # a hang guard: an aarch64 guest's boot under TCG on a loaded machine
def test_the_partition_ping_pongs_with_a_linux_guest_and_this_machine_through_one_region(image, probe, cross_probes,
                                                                                         tmp_path):
    if not KERNEL.is_file():
        pytest.skip("no aarch64 kernel: rtvbench kernel fetch --arch aarch64")
    (tmp_path / "c.toml").write_text(_campaign(_ipc("guest", "linux") + _ipc("host", "native")))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=1100)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    cells = {(m.environment, m.benchmark): m for m in run.measurements}
    for bench in ("guest", "host"):
        m = cells[("bm", bench)]
        assert m.status == "ok", m.error
        # The Linux probe's client command as stored; the image took the options it serves.
        assert m.command[1:4] == ["ipc", "--connect", "shm"] and "--shm-pci" in m.command
        assert m.meta["platform"] == "baremetal" and m.meta["params"]["shm_bytes"] == 4 << 20
        results = [r for r in m.results if r["role"] == "client"]
        assert [r["size_bytes"] for r in results] == SIZES
        for r in results:
            assert r["transport"] == "shm" and r["verified"] is True and r["complete"] is True
            assert r["count"] == COUNT == result_histogram(r).total
    # The other cells ran too: the guest's and this machine's against the same servers.
    assert all(m.status == "ok" for m in run.measurements), [(m.environment, m.error) for m in run.measurements]
    report = run_cli("report", "--store", "sqlite:///s.db", "--format", "json", "-o", "-", cwd=tmp_path,
                     env=cli_env())
    assert report.returncode == 0, report.stderr
    # The report summarises the partition's round trips by size, from those results.
    summaries = {(s["benchmark"], s["figure"]): s for s in json.loads(report.stdout)["summaries"]
                 if s["environment"] == "bm"}
    for bench in ("guest", "host"):
        for size in SIZES:
            assert summaries[(bench, f"shm.{size}B.count")]["values"] == [COUNT]
            assert summaries[(bench, f"shm.{size}B.p99")]["n"] == 1


REFUSED = {
    "the partition as the server": (_ipc("rtt", "bm"), 'shm = "r"',
                                    'benchmarks.rtt.peer: environment "bm" is a bare-metal image, which cannot '
                                    "serve round trips"),
    "another transport": ('[benchmarks.rtt]\nkind = "ipc"\npeer = "native"\ntransports = ["tcp"]\n', 'shm = "r"',
                          'environment "bm" is a bare-metal image, whose ipc is the client of a peer over its shm '
                          "region only"),
    "no peer": ('[benchmarks.rtt]\nkind = "ipc"\ntransports = ["shm"]\n', 'shm = "r"',
                'benchmarks.rtt.kind: environment "bm" is a bare-metal image, whose ipc is the client'),
    "pinned CPUs": (_ipc("rtt", "native", "cpus = [0]"), 'shm = "r"',
                    'benchmarks.rtt.cpus: cannot be honoured in environment "bm"'),
    "a region beyond its PCI window": (_ipc("rtt", "native"), 'shm = "r"\nshm_size_mb = 512',
                                       "shm_size_mb = 512 is more than the bare-metal image maps"),
    "no region": (_ipc("rtt", "native"), "", 'environments bm and native share no shm region; give the qemu '
                  'environments that exchange shm messages the same `shm = "NAME"` (a local environment maps the '
                  "file of a qemu one)"),
}


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_validate_refuses_an_ipc_the_image_cannot_do(image, tmp_path, case):
    benchmarks, partition, said = REFUSED[case]
    (tmp_path / "c.toml").write_text(_campaign(benchmarks, partition, linux=False))
    r = run_cli("validate", "c.toml", cwd=tmp_path, env=cli_env())
    assert r.returncode == 2, r.stderr
    line = next((line for line in r.stderr.splitlines() if said in line), None)
    assert line is not None, r.stderr
    assert line.rstrip(".").count(". ") == 0 and "Traceback" not in r.stderr
