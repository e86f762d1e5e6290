"""The bare-metal image as a campaign's environment (`target = "qemu"`, `image = "bare-metal"`): validate
takes the example of a partition beside a Linux guest and refuses, in one sentence naming the environment
and what it runs, what the image cannot run; a campaign boots the image beside this machine under a
neighbour's load, stores its latency records whole and compares the two; Ctrl-C or SIGTERM stops the
image's run with its results so far and leaves no QEMU behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from helpers.stored_so_far import stored_records
from host_helpers import (cli_env, json_report, kill_all, processes_with, refuses_once, run_cli, start_cli,
                          wait_for)
from rtvbench.analysis.histogram import result_histogram
from rtvbench.errors import TargetError
from rtvbench.runner.health import health_check
from rtvbench.targets.qemu import QemuEnvironment, QemuParams
from rtvbench.store import load_run, open_store

REPO = Path(__file__).resolve().parent.parent
IMAGE = REPO / "build" / "baremetal" / "aarch64" / "rtvb-probe.bin"

pytestmark = pytest.mark.qemu


@pytest.fixture(scope="module")
def image() -> Path:
    for tool in ("qemu-system-aarch64", "aarch64-linux-gnu-gcc"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    subprocess.run(["make", "-s", "-C", str(REPO), "baremetal"], check=True)
    return IMAGE


def _campaign(benchmark: str = "", load: str = "", environment: str = "", image: str = "bare-metal",
              duration_s: float = 1, repetitions: int = 1) -> str:
    return f"""
name = "partition"
repetitions = {repetitions}
seed = 1

[environments.bm]
target = "qemu"
arch = "aarch64"
image = "{image}"
{environment}
[loads.idle]
{load}
[benchmarks.irq]
kind = "latency"
interval_us = 1000
duration_s = {duration_s}
thresholds_us = [500]
{benchmark}
"""


@pytest.mark.functional
def test_validate_accepts_the_partition_beside_a_linux_guest(image):
    if not (REPO / "kernels" / "aarch64" / "vmlinuz").is_file():
        pytest.skip("no aarch64 kernel: rtvbench kernel fetch --arch aarch64")
    r = run_cli("validate", "examples/partition-vs-guest.toml", cwd=REPO, env=cli_env())
    assert r.returncode == 0, r.stderr
    assert "2 environment(s) x 3 load(s) x 3 benchmark(s)" in r.stdout


REFUSED = {
    "a priority": ("", "priority = 80", "", "benchmarks.irq.priority: cannot be honoured in environment \"bm\", "
                   'a bare-metal image, whose "latency" takes only interval_us, duration_s, loops, thresholds_us; '
                   'drop priority or measure environment "bm" in a campaign of its own'),
    "pinned CPUs": ("", 'cpus = "0"', "", "benchmarks.irq.cpus: cannot be honoured in environment \"bm\""),
    "a work budget": ("", "work_us = 100", "", "benchmarks.irq.work_us: cannot be honoured in environment \"bm\""),
    "another kind": ("", '[benchmarks.os]\nkind = "os"\ntests = ["null"]', "",
                     'benchmarks.os.kind: "os" cannot run in environment "bm", a bare-metal image, which runs only '
                     '"boot", "ipc", "latency", "mem-bw", "mem-lat", "rtos"; measure it in a campaign without that '
                     'environment'),
    "a load in it": ('[loads.hog]\nkind = "cpu"', "", "",
                     'loads.hog.where: environment "bm" is a bare-metal image, which runs no loads (only '
                     '"boot", "ipc", "latency", "mem-bw", "mem-lat", "rtos"); run the load in another environment '
                     'of the campaign, beside it'),
    "a Linux key": ("", "", 'cmdline = "quiet"', "environments.bm: cmdline describes a Linux guest, not a bare-metal "
                    "image (which takes accel, arch, boot_timeout_s, hang_timeout_s, image, memory_mb, shm, shm_size_mb); "
                    "drop it"),
    "no such image": ("", "", "", "environments.bm.image: "),
    "not an image": ("", "", "", "notes.bin is not an aarch64 image (its header says no arch an image has); name "
                     "an image built for arch aarch64 as `make baremetal` builds it"),
}
IMAGE_OF = {"no such image": "missing.bin", "not an image": "notes.bin"}


@pytest.mark.functional
@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_validate_refuses_what_the_image_cannot_run(image, tmp_path, case):
    load, benchmark, environment, said = REFUSED[case]
    (tmp_path / "notes.bin").write_text("not an image\n")
    (tmp_path / "c.toml").write_text(_campaign(benchmark, load, environment, image=IMAGE_OF.get(case, "bare-metal")))
    refuses_once(tmp_path, said)


#: the environment beside the partition: where the neighbour's load runs, and the comparison's candidate
BESIDE = {
    "native": '[environments.native]\ntarget = "local"',
    "linux": ('[environments.linux]\ntarget = "qemu"\narch = "aarch64"\nkernel = "{kernel}"\ncpus = 2\n'
              "boot_timeout_s = 600\nhang_timeout_s = 120"),
}


@pytest.mark.functional
@pytest.mark.parametrize("beside", BESIDE)
@pytest.mark.timeout(600)           # a hang guard: twelve 1 s runs (and a guest's boot) under TCG
def test_a_campaign_measures_the_partition_beside_another_environment_under_a_neighbours_load(
        image, probe, cross_probes, tmp_path, beside):
    kernel = REPO / "kernels" / "aarch64" / "vmlinuz"
    if beside == "linux" and not kernel.is_file():
        pytest.skip("no aarch64 kernel: rtvbench kernel fetch --arch aarch64")
    load = f'[loads.neighbour]\nkind = "cpu"\nwhere = "{beside}"\npercent = 50\ncpus = [1]'
    comparison = f'[[comparisons]]\nbaseline = "bm"\ncandidate = "{beside}"\nloads = ["neighbour"]'
    text = _campaign(comparison, load, repetitions=3)
    (tmp_path / "c.toml").write_text(text.replace(
        "\n[environments.bm]", "\n" + BESIDE[beside].format(kernel=kernel) + "\n[environments.bm]", 1))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=540)
    assert r.returncode == 0, r.stderr
    assert "12 of 12 measurements ok" in r.stdout
    assert "`bm` is a bare-metal image in a QEMU guest under TCG" in r.stdout + r.stderr
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    described = run.targets["bm"]
    assert (described["system"], described["arch"], described["accel"], described["emulated"]) == \
        ("bare-metal image", "aarch64", "tcg", True)
    assert described["probe_version"] and run.fingerprints["bm"]["platform"] == "baremetal"
    partition = [m for m in run.measurements if m.environment == "bm"]
    assert len(partition) == 6
    for m in partition:
        assert m.status == "ok", m.error
        # The Linux probe's command line as stored; the image got the part of it it takes.
        assert m.command[:2] == ["rtvb-probe", "latency"]
        one, everything = (next(r for r in m.results if r["cpu"] == cpu) for cpu in (0, "all"))
        assert everything["activations"] == 1000                 # 1 s of 1 ms deadlines
        assert everything["count"] + everything["missed"] == everything["activations"]
        assert result_histogram(everything).total == everything["count"] == one["count"]
    assert all(m.status == "ok" for m in run.measurements if m.environment == beside)
    rows = [c for c in json_report(tmp_path)["comparisons"]
            if (c["baseline"], c["candidate"]) == ({"environment": "bm", "load": "neighbour"},
                                                   {"environment": beside, "load": "neighbour"})]
    assert {c["figure"] for c in rows} >= {"avg_us", "p99_us", "max_us"}, rows
    assert all(c["benchmark"] == "irq" and c["verdict"] for c in rows), rows


@pytest.mark.functional
@pytest.mark.timeout(600)           # a hang guard: one image's boot under TCG
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_keeps_the_run_so_far_and_leaves_no_qemu(image, tmp_path, signum):
    """Ctrl-C or SIGTERM reaches the image's run as the agent protocol's `signal`: the image ends it with its
    results so far, as the Linux probe ends a run on SIGINT. A 600 s run makes the bound below a hang
    guard, not a timing."""
    # The image under a name of its own: QEMU's command line names it, so the test finds its QEMU only.
    mine = tmp_path / f"image-{uuid.uuid4().hex}.bin"
    shutil.copyfile(image, mine)
    (tmp_path / "c.toml").write_text(_campaign(image=mine.name, duration_s=600, repetitions=2))
    cli = start_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env())
    try:
        # The image prints its meta as its run starts.
        wait_for(lambda: stored_records(tmp_path / "s.db") > 0, timeout=300, what="the partition's first record")
        assert processes_with(mine.name)
        cli.send_signal(signum)
        out, err = cli.communicate(timeout=120)
    finally:
        if cli.poll() is None:
            cli.kill()
        kill_all(mine.name)
    assert cli.returncode == 130, err
    assert "Traceback" not in err
    assert not processes_with(mine.name)
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    [m] = run.measurements
    assert m.status == "interrupted", m.error
    assert m.meta["platform"] == "baremetal" and m.end["status"] == "interrupted"
    one, everything = m.results
    assert (one["cpu"], everything["cpu"]) == (0, "all")
    assert everything["count"] + everything["missed"] == everything["activations"] < 600_000
    assert result_histogram(everything).total == everything["count"]


@pytest.mark.functional
@pytest.mark.timeout(300)           # a hang guard: one image's boot under TCG
def test_the_target_answers_for_the_image_and_refuses_what_it_has_not(image, tmp_path):
    mine = tmp_path / f"image-{uuid.uuid4().hex}.bin"
    shutil.copyfile(image, mine)
    params = QemuParams.model_validate({"arch": "aarch64", "image": mine.name},
                                       context={"base_dir": str(tmp_path)})
    target = QemuEnvironment("bm", params)
    try:
        probe = target.deploy_probe()
        assert processes_with(mine.name)
        # A soak's health check: the image answers while its heartbeat is fresh.
        check = health_check(target, probe)
        assert check["probe_ok"] is True, check
        # What the image's QEMU costs this machine: its one vCPU thread, found by name, and its memory.
        [usage] = target.host_usage()["guests"]
        assert usage["vcpus"] == 1 and usage["rss_kib"] > 0 and check["qemu"][0]["pid"] == usage["pid"]
        with pytest.raises(TargetError, match="has no files, so /proc/stat cannot be read there"):
            target.read_file("/proc/stat")
        with pytest.raises(TargetError, match="nothing in the background"):
            target.start_background([probe, "sample"])
        # A command the image does not have is its own answer: exit 127, one err line.
        done = target.run([probe, "noise"], lambda line: None)
        assert done.returncode == 127 and "it has: latency" in done.stderr
    finally:
        target.close()
    assert not processes_with(mine.name)


# Not functional: the kill must land within the 4 s the image measures (see the guest's own test in
# test_qemu_target.py).
@pytest.mark.timeout(600)           # a hang guard: two boots of the image and two 4 s runs under TCG
def test_a_partition_lost_mid_run_is_recorded_booted_afresh_and_measured_again(image, tmp_path):
    mine = tmp_path / f"image-{uuid.uuid4().hex}.bin"
    shutil.copyfile(image, mine)
    (tmp_path / "c.toml").write_text(_campaign(image=mine.name, duration_s=4, repetitions=2))
    cli = start_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env())
    try:
        wait_for(lambda: stored_records(tmp_path / "s.db") > 0, timeout=300, what="the partition's first record")
        [qemu] = processes_with(mine.name)
        os.kill(qemu, signal.SIGKILL)
        out, err = cli.communicate(timeout=300)
    finally:
        if cli.poll() is None:
            cli.kill()
        kill_all(mine.name)
    assert cli.returncode == 0, err
    assert "2 of 2 measurements ok" in out
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    [lost] = run.failed_attempts
    assert lost.attempt == 1 and "the bare-metal image of environment bm was lost during" in lost.error, lost.error
    assert sorted(m.attempt for m in run.measurements) == [1, 2]
    assert all(m.status == "ok" and m.result() is not None for m in run.measurements)
    assert not processes_with(mine.name)
