"""A bare-metal partition's memory kinds and its riscv64 image in a campaign: validate refuses what the image
cannot take of `mem-lat` and `mem-bw` (a key, a range, a size beyond its memory area, a C library
operation) and a Linux guest on riscv64, each in one sentence naming the environment and key; the riscv64
image measures latency and memory beside this machine under a neighbour's memory load; and the example of
a partition beside a Linux guest measures memory latency in both under the guest's memory load and
compares them. Under TCG no figure here says what a memory does, so the checks are counts, keys and the
chains' laps."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from host_helpers import cli_env, json_report, refuses_once, run_cli
from rtvbench.store import load_run, open_store

REPO = Path(__file__).resolve().parent.parent
KERNEL = REPO / "kernels" / "aarch64" / "vmlinuz"

pytestmark = [pytest.mark.qemu, pytest.mark.functional]


@pytest.fixture(scope="module")
def images() -> None:
    for tool in ("qemu-system-aarch64", "qemu-system-riscv64", "aarch64-linux-gnu-gcc", "riscv64-linux-gnu-gcc"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    subprocess.run(["make", "-s", "-C", str(REPO), "baremetal"], check=True)


def _campaign(benchmarks: str, environment: str = "", arch: str = "riscv64", image: str = "bare-metal") -> str:
    return f"""
name = "partition-memory"
repetitions = 1
seed = 1

[environments.native]
target = "local"

[environments.bm]
target = "qemu"
arch = "{arch}"
{image and f'image = "{image}"'}
{environment}
[loads.idle]

[loads.neighbour]
kind = "mem"
where = "native"
op = "copy"
buffer_size = "8M"
{benchmarks}
"""


CHASE = '[benchmarks.chase]\nkind = "mem-lat"\nsizes = ["16K", "1M"]\n'
BW = '[benchmarks.bw]\nkind = "mem-bw"\nsizes = ["16K", "1M"]\noperations = ["read", "copyloop", "rand_rd"]\n'

REFUSED = {
    "a pinned CPU": (CHASE + "cpu = 0\n", "benchmarks.chase.cpu: cannot be honoured in environment \"bm\", a "
                     'bare-metal image, whose "mem-lat" takes only sizes, stride, mode, seed; drop cpu'),
    "a range": (CHASE.replace('["16K", "1M"]', '["4K-1M"]'), 'benchmarks.chase.sizes: cannot be honoured in '
                'environment "bm", a bare-metal image: its sizes are a list, not the range 4K-1M; list the sizes'),
    "a chain beyond the area": (CHASE.replace('"1M"', '"96M"'), 'benchmarks.chase.sizes: cannot be honoured in '
                                'environment "bm", a bare-metal image: size 96M does not fit its 96M memory area '
                                "(the chain and 4 bytes a slot); use smaller sizes"),
    "a stride beyond 1M": (CHASE.replace('["16K", "1M"]', '["4M"]') + 'stride = "2M"\n', "benchmarks.chase.stride: "
                           'cannot be honoured in environment "bm", a bare-metal image: its stride is at most 1M, '
                           "not 2M; use a smaller stride"),
    "two buffers beyond the area": (BW.replace('"1M"', '"48M"'), "benchmarks.bw.sizes: cannot be honoured in "
                                    'environment "bm", a bare-metal image: size 48M does not fit'),
    "memcpy by default": (BW.replace('operations = ["read", "copyloop", "rand_rd"]\n', ""),
                          'benchmarks.bw.operations: cannot be honoured in environment "bm", a bare-metal image: it '
                          'has no C library, so no memcpy or memset (the default "all" includes them); list '
                          'operations out of "read", "write", "rmw", "copyloop", "rand_rd", "rand_wr"'),
    "threads": (BW + "threads = 2\n", 'benchmarks.bw.threads: cannot be honoured in environment "bm"'),
    "a riscv64 Linux guest": (CHASE, "a Linux guest runs on x86_64 and aarch64 here, not riscv64 (which runs a "
                              'bare-metal image); set image = "bare-metal" or another arch'),
    "too little RAM": (CHASE, "environments.bm: memory_mb = 64 is less RAM than the bare-metal image needs (128 MiB: "
                       "QEMU loads it with its 96 MiB memory area); set memory_mb = 128 or more, or leave it out"),
    "the raw riscv64 image": (CHASE, "rtvb-probe.bin is not an riscv64 image (its header says no arch an image "
                              "has); name the .elf of an image built for arch riscv64"),
}


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_validate_refuses_what_the_partition_cannot_measure(images, tmp_path, case):
    benchmarks, said = REFUSED[case]
    image, environment = "bare-metal", ""
    if case == "a riscv64 Linux guest":
        # A kernel whose header says no arch: what refuses it is the arch.
        (tmp_path / "vmlinuz").write_bytes(bytes(4096))
        image, environment = "", 'kernel = "vmlinuz"'
    if case == "too little RAM":
        environment = "memory_mb = 64"
    if case == "the raw riscv64 image":
        image = str(REPO / "build" / "baremetal" / "riscv64" / "rtvb-probe.bin")
    (tmp_path / "c.toml").write_text(_campaign(benchmarks, environment, image=image))
    refuses_once(tmp_path, said)


def _check_chains(results: list[dict], sizes: set[int], modes: set[str]) -> None:
    """Every chain the image walked is one cycle over all its slots, for every size and mode asked."""
    assert {(r["size_bytes"], r["mode"]) for r in results} == {(s, m) for s in sizes for m in modes}
    for r in results:
        assert r["slots"] == r["size_bytes"] // r["stride_bytes"] and r["lap_slots"] == r["slots"], r
        assert r["ns_per_access"] > 0


@pytest.mark.timeout(600)           # a hang guard: eight short measurements, four of them under TCG
def test_the_riscv64_partition_measures_memory_beside_this_machine_under_its_memory_load(images, probe, tmp_path):
    comparison = '[[comparisons]]\nbaseline = "bm"\ncandidate = "native"\nloads = ["neighbour"]\n'
    (tmp_path / "c.toml").write_text(_campaign(CHASE + BW + comparison))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=540)
    assert r.returncode == 0, r.stderr
    assert "8 of 8 measurements ok" in r.stdout
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    assert (run.targets["bm"]["arch"], run.targets["bm"]["system"]) == ("riscv64", "bare-metal image")
    partition = [m for m in run.measurements if m.environment == "bm"]
    assert sorted((m.benchmark, m.load) for m in partition) == [
        ("bw", "idle"), ("bw", "neighbour"), ("chase", "idle"), ("chase", "neighbour")]
    for m in partition:
        assert m.status == "ok", m.error
        assert m.meta["platform"] == "baremetal" and m.meta["arch"] == "riscv64"
        if m.benchmark == "chase":
            # The Linux probe's command as stored; the image got its sizes, stride, mode and seed.
            assert m.command[:2] == ["rtvb-probe", "mem-lat"] and "--hugepages" in m.command
            _check_chains(m.results, {16 << 10, 1 << 20}, {"seq", "random"})
        else:
            ops = {(r["op"], r["size_bytes"]) for r in m.results if r["thread"] == "all"}
            assert ops == {(op, s) for op in ("read", "copyloop", "rand_rd") for s in (16 << 10, 1 << 20)}
            assert all(r["bps"] > 0 for r in m.results)
    rows = [c for c in json_report(tmp_path)["comparisons"] if c["declared"]]
    # Decoded as any environment's: a figure of every size, mode and operation on both sides.
    assert {c["figure"] for c in rows if c["benchmark"] == "chase"} == {
        f"lat.{s}_{m}" for s in ("16KiB", "1MiB") for m in ("seq", "random")}
    assert {c["figure"] for c in rows if c["benchmark"] == "bw"} == {
        f"bw.{op}.{s}" for op in ("read", "copyloop", "rand_rd") for s in ("16KiB", "1MiB")}
    assert all(c["baseline_median"] > 0 and c["candidate_median"] > 0 for c in rows), rows


@pytest.mark.timeout(900)           # a hang guard: a Linux guest's boot and twelve short measurements under TCG
def test_the_example_compares_memory_latency_in_the_partition_and_the_guest_under_its_memory_load(
        images, probe, cross_probes, tmp_path):
    if not KERNEL.is_file():
        pytest.skip("no aarch64 kernel: rtvbench kernel fetch --arch aarch64")
    text = (REPO / "examples" / "partition-vs-guest.toml").read_text()
    # The example as it is, once and with 1 s of latency, so that the test stays short.
    for was, now in (("repetitions = 3", "repetitions = 1"), ("duration_s = 5", "duration_s = 1"),
                     ('"../kernels/', f'"{REPO}/kernels/')):
        assert was in text
        text = text.replace(was, now)
    (tmp_path / "c.toml").write_text(text)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=840)
    assert r.returncode == 0, r.stderr
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    assert all(m.status == "ok" for m in run.measurements), [m.error for m in run.measurements]
    chase = {(m.environment, m.load): m for m in run.measurements if m.benchmark == "chase"}
    assert set(chase) == {(e, lo) for e in ("linux", "partition") for lo in ("idle", "neighbour", "memory")}
    for load in ("idle", "neighbour", "memory"):
        _check_chains(chase["partition", load].results, {16 << 10, 256 << 10, 4 << 20, 32 << 20}, {"random"})
    rows = [c for c in json_report(tmp_path)["comparisons"]
            if c["declared"] and c["benchmark"] == "chase"
            and (c["baseline"], c["candidate"]) == ({"environment": "partition", "load": "memory"},
                                                   {"environment": "linux", "load": "memory"})]
    assert {c["figure"] for c in rows} == {f"lat.{s}_random" for s in ("16KiB", "256KiB", "4MiB", "32MiB")}
    assert all(c["baseline_median"] > 0 and c["candidate_median"] > 0 and c["verdict"] for c in rows), rows
