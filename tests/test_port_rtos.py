"""The RTOS-primitive tests written once against the porting layer (probe/port/, docs/porting.md), run by
its two implementations: the Linux probe's `rtos --port` (POSIX threads at SCHED_FIFO on one CPU) and the
bare-metal images' `rtos` (their own scheduler) under QEMU's TCG on aarch64 and riscv64.

Every check is a ground truth the test code counts as it runs, none a time: each operation measured once
(count = requested, the histogram's count the count), the measured task ran exactly once per operation
and in the order the priorities demand (`in_order`: a higher-priority task activated or woken from a
lower one ran before the activator went on; the task the timer handler activated ran after the handler),
the semaphores' counts balance (`sem_left` = 0), and the host's `rtos` decoder reads every result."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from baremetal_console import REPO, Console, build_images, check_ready

from rtvbench.analysis.histogram import result_histogram
from rtvbench.kinds.rtos.decode import result_figures

PORT_TESTS = ["task_activate", "sem_wake", "sem_pingpong", "irq_task"]
WARMUP = 10


def check_port_run(records: list[dict], count: int, platform_keys: dict) -> None:
    assert [r["type"] for r in records] == ["meta", *["result"] * len(PORT_TESTS), "end"], records
    meta = records[0]
    assert {k: meta.get(k) for k in platform_keys} == platform_keys
    assert meta["params"]["tests"] == PORT_TESTS and meta["params"]["port"] is True
    assert records[-1]["status"] == "ok"
    for r in records[1:-1]:
        test = r["test"]
        assert r["via"] == "port" and "error" not in r, r
        assert r["count"] == count == r["attempted"], test
        assert result_histogram(r).total == count, test
        assert r["runs"] == count + WARMUP, test                  # the measured side ran once an operation
        assert r["in_order"] == count + WARMUP, test              # and always before the activator went on
        assert r["sem_left"] == 0, test
        assert r["min_ns"] <= r["p50_ns"] <= r["max_ns"], test
        figures = result_figures(r)
        assert figures[f"{test}.max_ns"] == r["max_ns"], test
        if test == "sem_pingpong":
            assert r["forward"]["count"] == r["back"]["count"] == count
            assert "sem_pingpong.half.avg_ns" in figures
    assert [r["test"] for r in records[1:-1]] == PORT_TESTS


@pytest.mark.functional
def test_linux_port_runs_every_test_with_its_ground_truths(probe):
    proc = subprocess.run([str(probe), "rtos", "--port", "--count", "500"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    records = [r for r in records if r["type"] != "warning"]
    if records[0]["privileges"]["policy"] != "fifo":
        pytest.skip("SCHED_FIFO was not granted: the order checks need it")
    check_port_run(records, 500, {"subcommand": "rtos"})


@pytest.mark.functional
@pytest.mark.parametrize("args,sentence", [
    (["--port", "--tests", "mutex"], "--tests must be all or a comma-separated list of task_activate, sem_wake, "
                                     "sem_pingpong, irq_task (with --port), got 'mutex'."),
    (["--port", "--priority", "99"], "--priority must be from 4 to 94 with --port: the port's tasks and timer "
                                     "thread run from P - 3 to P + 5."),
])
def test_linux_port_bad_options_exit_2(probe, args, sentence):
    proc = subprocess.run([str(probe), "rtos", *args], capture_output=True, text=True, timeout=10)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"rtvb-probe rtos: {sentence}\n")


def _aarch64() -> Console:
    return Console(["qemu-system-aarch64", "-machine", "virt,gic-version=2", "-cpu", "cortex-a53", "-m", "128M",
                    "-nographic", "-monitor", "none", "-serial", "stdio", "-kernel",
                    str(REPO / "build" / "baremetal" / "aarch64" / "rtvb-probe.elf")])


def _riscv64() -> Console:
    return Console(["qemu-system-riscv64", "-machine", "virt", "-m", "128M", "-bios", "default", "-nographic",
                    "-monitor", "none", "-serial", "stdio", "-kernel",
                    str(REPO / "build" / "baremetal" / "riscv64" / "rtvb-probe.elf")])


@pytest.fixture(scope="module", params=["aarch64", "riscv64"])
def image(request):
    build_images(f"qemu-system-{request.param}", "aarch64-linux-gnu-gcc", "riscv64-linux-gnu-gcc")
    console = _aarch64() if request.param == "aarch64" else _riscv64()
    deadline = time.monotonic() + 30
    while not (line := console.line(deadline)).startswith("ready "):
        pass   # OpenSBI's banner on riscv64
    check_ready(line)
    console.arch = request.param
    yield console
    console.close()


@pytest.mark.qemu
@pytest.mark.functional
def test_image_runs_every_test_on_its_scheduler_with_its_ground_truths(image):
    records, errors, status = image.run("rtos", "--count", "300", timeout_s=120)
    assert (errors, status) == ([], 0)
    check_port_run(records, 300, {"platform": "baremetal", "arch": image.arch, "subcommand": "rtos"})
    # Twice in one boot: the scheduler starts afresh and hands the main loop back each time.
    records, errors, status = image.run("rtos", "--count", "20", "--tests", "irq_task,task_activate", timeout_s=60)
    assert status == 0 and [r.get("test") for r in records[1:-1]] == ["task_activate", "irq_task"]
    assert all(r["in_order"] == r["runs"] == 20 + WARMUP for r in records[1:-1])


@pytest.mark.qemu
@pytest.mark.functional
@pytest.mark.parametrize("args,err", [
    (["--count", "0"], "rtvb-probe rtos: bad value '0'; give --count from 1 to 1000000."),
    (["--tests", "mutex"], "rtvb-probe rtos: bad --tests 'mutex'; give all or a comma-separated list of "
                           "task_activate, sem_wake, sem_pingpong, irq_task."),
    (["--loops", "3"], "rtvb-probe rtos: unknown option '--loops'; the image's rtos takes --count and --tests."),
])
def test_image_refuses_bad_options_and_keeps_serving(image, args, err):
    records, errors, status = image.run("rtos", *args)
    assert (records, errors, status) == ([], [err], 2)
    records, _, status = image.run("rtos", "--count", "1", "--tests", "sem_wake")
    assert status == 0 and records[1]["count"] == 1
