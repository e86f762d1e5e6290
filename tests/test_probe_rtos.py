"""End-to-end tests of `rtvb-probe rtos` against ground truths that hold on a shared, busy machine.

- The ping-pong's round trip and its two measured steps come from the same three clock reads, so the
  steps' means add up to the round trip's mean exactly, and the two steps, alike by construction
  (each a post, a block and a switch between threads of equal priority on one CPU), are each half the
  round trip: medians within 15 % (the body of each distribution is a few % wide; a clock read taken
  at the wrong point, e.g. before the wait instead of after it, moves one step by the whole switch,
  about 50 %).
- FIFO beats OTHER under a competing SCHED_OTHER load: a busy loop at nice -15 pinned to the measured
  CPU. A real-time thread's timer wake-up preempts it at once; an ordinary one waits for the loop's
  slice. Runs alternate FIFO, OTHER, FIFO, OTHER, so that a machine that changes changes both; FIFO
  runs at priority 99, above the real-time loads other tests start.
- Every test measures exactly --count operations, and attempted = count + missed.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from probe_records import of_type, records
from rtvbench.kinds.rtos.names import RTOS_TESTS
from rtvbench.probe.schema import parse_record

#: the CPU the tests pin to: not CPU 0, where most of the machine's own work lands
CPU = 1 if (os.cpu_count() or 1) > 1 else 0
TIMER_PERIOD_NS = 250_000
WARMUP = 10

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO and a nice -15 load need root")


def run_rtos(probe: Path, *args: str, **kw) -> list[dict]:
    proc = subprocess.run([str(probe), "rtos", *args], capture_output=True, text=True, timeout=60, **kw)
    assert proc.returncode == 0, proc.stderr
    return records(proc.stdout)


def results(recs: list[dict]) -> dict[str, dict]:
    return {r["test"]: r for r in of_type(recs, "result")}


@needs_root
def test_every_test_measures_count_operations_and_attempted_is_count_plus_missed(probe):
    """All tests under FIFO: each result has exactly --count samples (the histogram holds them all),
    attempted = count + missed, and a yield between two FIFO threads on one CPU always switches (no
    miss). Single-thread samples hold one clock read, so none is below it. The timer test sleeps one
    period per operation, warm-up included, so the run lasts at least that."""
    count = 300
    recs = run_rtos(probe, "--count", str(count), "--cpus", str(CPU))
    assert recs[0]["type"] == "meta" and recs[-1] == {**recs[-1], "type": "end", "status": "ok"}
    assert recs[0]["privileges"]["rt_granted"] is True and not of_type(recs, "warning")
    res = results(recs)
    assert list(res) == list(RTOS_TESTS)            # the probe's order, every test
    for test, r in res.items():
        assert r["count"] == count, test
        assert r["attempted"] == r["count"] + r["missed"], test
        assert sum(c for _, _, c in r["histogram"]["buckets"]) == count, test
        assert r["policy"] == r["policy_granted"] == "fifo" and r["priority"] == 80 and r["cpu"] == CPU
        assert "error" not in r, r["error"]
        assert r["min_ns"] <= r["p50_ns"] <= r["p99_ns"] <= r["max_ns"], test
    assert res["yield"]["missed"] == 0
    for test in ("mutex", "sem"):
        assert res[test]["min_ns"] >= res[test]["clock_read_ns"] > 0, res[test]
    assert res["timer"]["timer_slack_ns"] == 0
    assert recs[-1]["elapsed_ns"] >= (count + WARMUP) * TIMER_PERIOD_NS


@needs_root
def test_pingpong_steps_add_up_to_the_round_trip(probe):
    recs = run_rtos(probe, "--tests", "sem_pingpong", "--count", "2000", "--cpus", str(CPU), "--priority", "99")
    r = results(recs)["sem_pingpong"]
    fwd, back = r["forward"], r["back"]
    print(f"round trip p50 {r['p50_ns']} ns, forward {fwd['p50_ns']}, back {back['p50_ns']}")
    assert fwd["count"] == back["count"] == r["count"] == 2000
    # Exact: the per-operation identity (t2 - t0) = (t1 - t0) + (t2 - t1), averaged.
    assert fwd["avg_ns"] + back["avg_ns"] == pytest.approx(r["avg_ns"], abs=0.01)
    assert fwd["min_ns"] + back["min_ns"] <= r["min_ns"]
    assert r["max_ns"] <= fwd["max_ns"] + back["max_ns"]
    # Symmetry: each step is half of the round trip (medians, 15 %: see the module's docstring).
    half = r["half_round_trip"]
    assert half["p50_ns"] == r["p50_ns"] / 2 and half["min_ns"] == r["min_ns"] / 2
    for step in (fwd, back):
        assert step["p50_ns"] == pytest.approx(half["p50_ns"], rel=0.15), (step["p50_ns"], half["p50_ns"])
    assert fwd["p50_ns"] + back["p50_ns"] == pytest.approx(r["p50_ns"], rel=0.10)


class NiceBusyLoop:
    """A SCHED_OTHER busy loop at nice -15 on CPU, for the length of a `with`."""

    def __init__(self, cpu: int = CPU) -> None:
        code = f"import os; os.sched_setaffinity(0, {{{cpu}}}); os.nice(-15); print('ready', flush=True)\nwhile True: pass"
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


@needs_root
def test_fifo_activation_beats_other_under_a_competing_load(probe):
    """With the busy loop on the CPU, in three alternating rounds.

    The wake-up comes from the timer interrupt while the loop runs. A FIFO thread preempts it at once;
    an ordinary one waits until the scheduler picks it over a loop of 29 times its weight (and has
    50 us of timer slack). Over three rounds, the median of OTHER's p99 is at least 5 times the median
    of FIFO's: a stall of this shared VM only ever adds latency, and with 200 wake-ups a round two
    stalls put FIFO's p99 on them (seen once: a ratio of 4.7 beside stress-ng), so the median of three
    rounds keeps one disturbed round of either policy out of the comparison.

    A futex wake is not compared: there the waker is the running thread, and whether the scheduler
    lets an ordinary woken thread preempt it is its wake-up heuristic's choice, not the policy's
    guarantee (wake-ups slower than twice FIFO's median were 5.5-8.4 % under OTHER on one day and
    0.18 % on another, on this VM).

    Measured on this 2-vCPU VM: timer p99 FIFO 14-39 us, OTHER 2.5-4.6 ms (also beside
    stress-ng --cpu 2)."""
    timer_args = ("--tests", "timer", "--count", "200", "--cpus", str(CPU))
    fifo_args = ("--policy", "fifo", "--priority", "99")
    timer_p99 = {"fifo": [], "other": []}
    with NiceBusyLoop():
        time.sleep(0.1)
        for _ in range(3):
            fifo = results(run_rtos(probe, *timer_args, *fifo_args))["timer"]
            other = results(run_rtos(probe, *timer_args, "--policy", "other"))["timer"]
            assert fifo["policy_granted"] == "fifo" and other["policy_granted"] == "other"
            timer_p99["fifo"].append(fifo["p99_ns"])
            timer_p99["other"].append(other["p99_ns"])
    print("timer p99", timer_p99)
    assert statistics.median(timer_p99["other"]) >= 5 * statistics.median(timer_p99["fifo"]), timer_p99


def test_sigint_ends_the_run_as_interrupted_with_the_results_so_far(probe):
    proc = subprocess.Popen([str(probe), "rtos", "--tests", "sem,timer", "--count", "1000000", "--cpus", str(CPU)],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0
    recs = records(out)
    assert recs[-1]["status"] == "interrupted"
    res = results(recs)
    assert 0 < res["timer"]["count"] < 1_000_000
    assert res["timer"]["attempted"] == res["timer"]["count"] + res["timer"]["missed"]


@pytest.mark.parametrize("args,sentence", [
    (["--priority", "1"], "--priority must be from 2 to 99 under --policy fifo: the activating thread runs one "
                          "below it."),
    (["--policy", "other", "--priority", "5"], "--policy other takes no real-time priority; drop --priority or "
                                               "use 0."),
    (["--count", "0"], "--count must be an integer from 1 to 1000000, got '0'."),
    (["--tests", "mutex,irq"], "--tests must be all or a comma-separated list of futex_wake, sem_wake, mutex, "
                               "mutex_handover, sem, sem_pingpong, mq, signal, yield, timer, got 'mutex,irq'."),
    (["--cpus", "0,1"], "--cpus must be one CPU number such as 1, got '0,1'."),
    (["--policy", "deadline"], "--policy must be fifo, rr or other, got 'deadline'."),
    (["extra"], "unexpected argument 'extra'; run 'rtvb-probe rtos --help'."),
])
@pytest.mark.functional
def test_bad_options_exit_2_with_one_sentence(probe, args, sentence):
    proc = subprocess.run([str(probe), "rtos", *args], capture_output=True, text=True, timeout=10)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"rtvb-probe rtos: {sentence}\n")


@pytest.mark.functional
def test_help_lists_every_test(probe):
    proc = subprocess.run([str(probe), "rtos", "--help"], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0
    assert " ".join(RTOS_TESTS) in proc.stdout


def _unprivileged() -> None:
    """In the child before exec: no real-time priority allowed, then an ordinary user."""
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming an unprivileged user needs root")
@pytest.mark.functional
def test_refused_fifo_warns_and_measures_under_other(probe):
    """As user nobody with RLIMIT_RTPRIO 0 (so the probe cannot raise it): a no_rt_policy warning, meta's
    privileges say other, and every result says it asked for fifo and got other."""
    where = Path(tempfile.mkdtemp(prefix="rtvb-rtos-"))
    try:
        os.chmod(where, 0o755)
        copy = where / "rtvb-probe"
        shutil.copy(probe, copy)
        os.chmod(copy, 0o755)
        recs = run_rtos(copy, "--tests", "futex_wake,yield", "--count", "50", "--cpus", str(CPU),
                        preexec_fn=_unprivileged, cwd=where)
    finally:
        shutil.rmtree(where)
    (warning,) = [w for w in of_type(recs, "warning") if w["code"] == "no_rt_policy"]
    assert "SCHED_FIFO priority 80 was not granted" in warning["message"]
    assert recs[0]["privileges"] == {**recs[0]["privileges"], "policy": "other", "priority": 0, "rt_granted": False}
    res = results(recs)
    assert set(res) == {"futex_wake", "yield"}
    for r in res.values():
        assert (r["policy"], r["policy_granted"], r["priority"]) == ("fifo", "other", 0)
        assert r["count"] == 50 and r["attempted"] == 50 + r["missed"]
    assert recs[-1]["status"] == "ok"


@pytest.mark.functional
def test_records_pass_the_hosts_checks(probe):
    """The host's record checks (rtvbench/probe_schema.py) accept every line the probe prints."""
    proc = subprocess.run([str(probe), "rtos", "--count", "20", "--cpus", str(CPU)], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [parse_record(line)["type"] for line in lines] == ["meta"] + ["result"] * len(RTOS_TESTS) + ["end"]


@pytest.mark.functional
def test_host_defaults_are_the_probes(probe):
    """The campaign's defaults (policy, priority, count, tests) are what the probe does when not told."""
    from rtvbench.benchmarks import BENCHMARKS
    host = BENCHMARKS.get("rtos").Params.model_validate({})
    params = run_rtos(probe, "--tests", "mutex", "--cpus", str(CPU))[0]["params"]
    assert (host.policy, host.priority, host.count) == (params["policy"], params["priority"], params["count"])
    assert list(host.tests) == list(RTOS_TESTS) == run_rtos(probe, "--count", "1", "--cpus", str(CPU))[0]["params"]["tests"]
