"""End-to-end tests of `rtvb-probe os` against ground truth and independent peers.

Ground truths: getrusage's minor-fault count (page faults), the order of costs that
follows from what each operation contains (fork < fork+exec < fork+/bin/sh -c, a
context switch < a fork), the identity between the context-switch figure and the ring
and overhead it is derived from. Peers: a tight loop of syscall(SYS_getppid) in a C
program compiled here, and a Python ping-pong over os.pipe, each run alternately with
the probe. This VM is shared with other test suites, so comparisons use each side's
least disturbed figure (the minimum over samples and runs).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import pytest
from above_other_load import ABOVE_OTHER_LOAD
from probe_records import records

CPU = sorted(os.sched_getaffinity(0))[0]


def assert_usage_error(probe: Path, sub: str, args: list[str]) -> None:
    """Exit 2, one sentence on stderr, nothing on stdout."""
    proc = subprocess.run([str(probe), sub, *args], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, (args, proc.stderr)
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"rtvb-probe {sub}: ") and proc.stderr.count("\n") == 1


def run_os(probe: Path, *args: str, prefix: tuple[str, ...] = ()) -> list[dict]:
    proc = subprocess.run([*prefix, str(probe), "os", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    recs = records(proc.stdout)
    assert recs[0]["type"] == "meta" and recs[-1]["type"] == "end", recs[-1]
    assert recs[-1]["status"] == "ok", recs[-1]
    return recs


def results(recs: list[dict], test: str) -> list[dict]:
    return [r for r in recs if r["type"] == "result" and r["test"] == test]


def one(recs: list[dict], test: str) -> dict:
    (res,) = results(recs, test)
    return res


@pytest.mark.functional
def test_meta_lists_every_parameter_and_results_carry_the_harness_fields(probe):
    # The harness stops a figure at its time limit even short of min_samples, so with --quick's 0.3 s a
    # busy machine could leave fewer than 5 samples. With a limit no run reaches and an error target
    # that 5 samples always meet, every figure stops at min_samples whatever the load.
    recs = run_os(probe, "--tests", "null,select", "--fds", "10", "--quick", "--max-time-s", "600",
                  "--target-error", "1")
    params = recs[0]["params"]
    assert params["tests"] == ["null", "select"]
    assert params["quick"] is True and params["fds"] == [10]
    for key in ("dir", "ctx", "ctx_cpu", "pair_cpus", "mmap_sizes_bytes", "file_sizes_bytes", "pagefault_bytes",
                "reread_bytes", "bw_chunk_bytes", "exec_path", "sh_path", "timing"):
        assert key in params, key
    assert params["timing"] == {"min_sample_ns": 2_000_000, "max_time_ns": 600_000_000_000, "min_samples": 5,
                                "target_rel_error": 1}
    null = one(recs, "null")
    assert null["samples"] == len(null["values_ns"]) >= 5
    # The summary is that of the samples it lists.
    values = null["values_ns"]
    assert null["min_ns"] == min(values) and null["max_ns"] == max(values)
    assert null["median_ns"] == pytest.approx(statistics.median(values), rel=1e-8)
    assert null["ns_per_op"] == pytest.approx(statistics.fmean(values), rel=1e-8)
    assert null["stddev_ns"] == pytest.approx(statistics.stdev(values), rel=1e-6, abs=1e-6)
    # A plausible cost per call: the least disturbed sample, since other load only adds to each.
    assert 10 < null["min_ns"] < 100_000
    assert {(r["fds"], r["fd_kind"]) for r in results(recs, "select")} == {
        (10, "idle pipe"), (10, "regular file"), (10, "tcp socket")}


def test_pagefault_faults_exactly_the_pages_it_touches(probe):
    """getrusage(ru_minflt) around the touching: one fault per page written, for
    anonymous memory and for a private file mapping. A read touch (fault-around maps 16
    pages per fault) or transparent huge pages (512) would be far from 1. LMbench's
    definition, a read of a shared file mapping in random order, takes a fault for a
    block of neighbours: far fewer faults than pages, and a far lower cost per page."""
    recs = run_os(probe, "--tests", "pagefault", "--quick")
    by_kind = {(r["backing"], r["access"]): r for r in results(recs, "pagefault")}
    assert set(by_kind) == {("anon", "write"), ("file", "write"), ("file", "read")}
    for kind, res in by_kind.items():
        assert res["pages_touched"] >= 1024, kind
        # The region's replacement, timed apart and subtracted, is not the faults themselves: a release
        # timing that took them in would leave next to nothing per fault. Quiet, it costs 0.16-0.37 of
        # a fault; beside stress-ng --cpu 2 its mean rose sevenfold (the unmapping's shootdown waits
        # for the busy other CPU, it seems), to 1.3-1.7 of a fault: hence a factor of 3, not 1.
        # A read touch's cost per page is a fraction of a fault (fault-around), its release per page is
        # not: the bound holds where a page is a fault (it failed twice beside stress-ng for the read).
        assert 0 < res["release_ns_per_page"], (kind, res)
        if kind[1] == "write":
            assert res["release_ns_per_page"] < 3 * res["ns_per_op"], (kind, res)
        assert 5 < res["ns_per_op"] < 1_000_000
    for kind in (("anon", "write"), ("file", "write")):
        assert abs(by_kind[kind]["faults_per_page"] - 1.0) < 0.002, (kind, by_kind[kind]["faults_per_page"])
    read = by_kind[("file", "read")]
    # Quiet, fault-around leaves 0.07-0.09 faults per page; beside stress-ng --cpu 2 it was 0.75 once. Any
    # figure clearly below the writes' 1.000 shows it happened.
    assert read["order"] == "random" and read["faults_per_page"] <= 0.9, read["faults_per_page"]
    assert read["min_ns"] < by_kind[("file", "write")]["min_ns"] * read["faults_per_page"] * 4


def test_select_on_regular_files_is_the_scan_without_poll_methods(probe):
    """A regular file has no poll method: the kernel calls nothing per descriptor, so 90
    more of them cost less than 90 more idle pipes or idle TCP sockets, whose poll method
    runs each time. The probe checks each call's return (0 for idle pipes and sockets, N for
    ready files)."""
    recs = run_os(probe, "--tests", "select,poll", "--fds", "10,100", "--quick")
    for test in ("select", "poll"):
        best = {(r["fds"], r["fd_kind"]): r["min_ns"] for r in results(recs, test)}
        assert len(best) == 6, best
        per = {kind: (best[(100, kind)] - best[(10, kind)]) / 90 for kind in ("idle pipe", "regular file",
                                                                              "tcp socket")}
        assert 0 < per["regular file"] < min(per["idle pipe"], per["tcp socket"]), (test, per)


def test_protection_fault_alone_is_the_refault_loop_minus_a_signal(probe):
    """Two definitions: ours (fault, delivery, siglongjmp) and LMbench's (a handler that
    returns, so the access faults again; the cost of catching a signal subtracted). The
    second is derived sample by sample from its own with-signal loop."""
    recs = run_os(probe, "--tests", "prot_fault,sig_catch", "--quick")
    by_handler = {r["handler"]: r for r in results(recs, "prot_fault")}
    assert set(by_handler) == {"siglongjmp", "return"}
    only = by_handler["return"]
    sub = only["signal_subtracted_ns"]
    assert 0 < sub < one(recs, "sig_catch")["median_ns"] * 1.5, (sub, one(recs, "sig_catch")["median_ns"])
    expected = [max(0.0, v - sub) for v in only["with_signal"]["values_ns"]]
    assert only["values_ns"] == pytest.approx(expected, rel=1e-6, abs=1e-3)
    assert 0 < only["min_ns"] < only["with_signal"]["min_ns"]


def test_mmap_definitions_touch_what_they_say(probe):
    """Every page read (fault-around: a fault per 16 pages at most) against LMbench's
    sparse touch (one write per 16 KiB over the first tenth: at most one fault per write);
    the sparse one touches a fortieth of the pages, so it is cheaper at 16 MiB."""
    recs = run_os(probe, "--tests", "mmap", "--mmap-sizes", "1m,16m", "--quick")
    res = {(r["size_bytes"], r["touch"]): r for r in results(recs, "mmap")}
    assert len(res) == 4, res
    for size in (1 << 20, 16 << 20):
        every, sparse = res[(size, "every page")], res[(size, "sparse")]
        writes = -(-(size // 10) // (16 << 10))
        assert 1 <= sparse["faults_per_map"] <= writes, (size, sparse["faults_per_map"], writes)
        assert 1 <= every["faults_per_map"] <= every["pages"], (size, every["faults_per_map"])
    assert res[(16 << 20, "sparse")]["min_ns"] < res[(16 << 20, "every page")]["min_ns"]


def test_process_creation_costs_grow_with_what_it_does(probe):
    """fork < fork+exec (adds exec of the static probe) < fork+/bin/sh -c (adds the shell
    in front of the same exec). Compared on the fastest sample of each over three rounds
    (fastest samples measured on this VM: fork 88-89 us, fork_exec 490-492 us, fork_sh
    1.15-1.16 ms). A process that waits for its child is at the mercy of other load on
    the CPU: beside stress-ng --cpu 2 each new child waited a time slice behind the hogs,
    and fork's best sample (3.9 ms) came out above fork_exec's (1.7 ms), once in four
    rounds; run above that load (SCHED_FIFO as root), four of four held."""
    if not Path("/bin/sh").exists():
        pytest.skip("no /bin/sh")
    best: dict[str, float] = {}
    for _ in range(3):
        recs = run_os(probe, "--tests", "fork,fork_exec,fork_sh", "--quick", prefix=ABOVE_OTHER_LOAD)
        for test in ("fork", "fork_exec", "fork_sh"):
            best[test] = min(best.get(test, float("inf")), one(recs, test)["min_ns"])
    assert one(recs, "fork_exec")["exec_path"] and one(recs, "fork_sh")["command"].endswith("os --x-noop")
    assert 0 < best["fork"] < best["fork_exec"] < best["fork_sh"], best


def assert_ctx_derived_from_its_ring(c: dict, target: float) -> None:
    """The identities of a ctx result, whatever the load: each sample is the ring's circuit / procs
    less the mean hop without a switch, bounded at zero; the error is that of both means; converged
    means the target was reached with nothing clamped, and a figure that did not converge says why."""
    procs, ring, hop = c["procs"], c["ring"], c["overhead"]
    assert c["overhead_subtracted_ns"] == hop["ns_per_op"]
    expected = [max(0.0, v / procs - hop["ns_per_op"]) for v in ring["values_ns"]]
    assert c["values_ns"] == pytest.approx(expected, rel=1e-6, abs=1e-3)
    assert c["clamped_samples"] == sum(1 for v in ring["values_ns"] if v / procs < hop["ns_per_op"])
    assert min(c["values_ns"]) >= 0 and c["min_ns"] >= 0 and c["ns_per_op"] >= 0
    if not c["clamped_samples"]:
        assert c["ns_per_op"] == pytest.approx(ring["ns_per_op"] / procs - hop["ns_per_op"], rel=1e-6)
    # The hop without a switch is measured before and after the ring (at least 5 samples each side).
    assert hop["samples"] >= 10
    if c["ns_per_op"] > 0:
        se = ((ring["stddev_ns"] / procs) ** 2 / ring["samples"] + hop["stddev_ns"] ** 2 / hop["samples"]) ** 0.5
        assert c["rel_error"] == pytest.approx(se / c["ns_per_op"], rel=1e-6)
    if c["converged"]:
        assert c["rel_error"] < target and c["clamped_samples"] == 0 and c["not_converged_reason"] is None
    else:
        why = c["not_converged_reason"]
        assert f"a {c['ws_bytes']}-byte working-set read" in why, why
        assert "lost in the noise" in why if c["clamped_samples"] else "standard error, above the" in why, why


def test_context_switch_is_positive_below_fork_and_derived_from_its_ring(probe):
    recs = run_os(probe, "--tests", "ctx,fork", "--ctx", "2p/0k,8p/16k", "--quick")
    target = recs[0]["params"]["timing"]["target_rel_error"]
    fork = one(recs, "fork")
    ctx = {r["label"]: r for r in results(recs, "ctx")}
    assert set(ctx) == {"2p/0k", "8p/16k"}
    c = ctx["2p/0k"]
    assert c["procs"] == 2 and c["ws_bytes"] == 0 and c["cpu"] == CPU
    # Fastest samples: other load on this VM only adds to each figure.
    assert 0 < c["min_ns"] < fork["min_ns"], (c["min_ns"], fork["min_ns"])
    for c in ctx.values():
        assert_ctx_derived_from_its_ring(c, target)


def test_context_switch_with_64k_working_sets_converges_or_says_why(probe):
    """The 64 KiB rows, with the default time limit: the hop without a switch (the pipe and the
    64 KiB read) is 1.5 to 3.5 times the switch here, so the error target must be met by the
    difference, not by the ring alone (which once stopped at 5 samples with the switch at 2-4 %).
    Whether a row converges depends on the machine's other load; that it either converges or
    carries its reason, and that the figure is its ring less its hop, does not. The hop alone reads
    its 64 KiB each time: it costs more than the same hop with nothing to read."""
    recs = run_os(probe, "--tests", "ctx", "--ctx", "2p/0k,2p/64k,8p/64k")
    target = recs[0]["params"]["timing"]["target_rel_error"]
    max_time_ns = recs[0]["params"]["timing"]["max_time_ns"]
    ctx = {r["label"]: r for r in results(recs, "ctx")}
    assert set(ctx) == {"2p/0k", "2p/64k", "8p/64k"}
    for label, c in ctx.items():
        assert_ctx_derived_from_its_ring(c, target)
        assert c["ws_bytes"] == (65536 if label.endswith("64k") else 0)
    assert ctx["2p/64k"]["overhead"]["min_ns"] > ctx["2p/0k"]["overhead"]["min_ns"]
    # Converged or not, a 64 KiB row takes the samples its difference needs, not the ring's 5, unless
    # the time limit (over the ring and the hop together) ended it there: on a busy machine their
    # samples can fill it (seen beside stress-ng --cpu 2), where the stop this guards against had
    # sampled for a few tens of milliseconds.
    for label in ("2p/64k", "8p/64k"):
        c = ctx[label]
        sampled_ns = sum(part["n_per_sample"] * sum(part["values_ns"]) for part in (c["ring"], c["overhead"]))
        assert c["converged"] or c["ring"]["samples"] > 5 or sampled_ns >= 0.25 * max_time_ns, (
            label, c["ring"]["samples"], sampled_ns)


PEER_C = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
/* n calls of syscall(SYS_getppid), timed with CLOCK_MONOTONIC, reps times. */
int main(int argc, char **argv)
{
    long n = atol(argv[1]), reps = atol(argv[2]);
    for (long r = 0; r < reps; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (long i = 0; i < n; i++)
            syscall(SYS_getppid);
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("%.3f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
    }
    return 0;
}
"""


def test_null_syscall_agrees_with_an_independent_getppid_loop(probe, tmp_path):
    """Peer: a C loop of syscall(SYS_getppid) timed in 50 chunks of 10000 calls (about
    2 ms, as the probe's --quick samples), alternating with `os --tests null` three
    times. The fastest chunk and the fastest sample must agree within 15 % (measured on
    this VM: probe 185-187 ns, loop 184-186 ns, ratio 0.996-1.008 over five pairs)."""
    src = tmp_path / "getppid_loop.c"
    src.write_text(PEER_C)
    exe = tmp_path / "getppid_loop"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(src)], check=True)
    ours, theirs = [], []
    for _ in range(3):
        ours.append(one(run_os(probe, "--tests", "null", "--quick"), "null")["min_ns"])
        out = subprocess.run([str(exe), "10000", "50"], capture_output=True, text=True, check=True).stdout
        theirs.append(min(float(x) for x in out.split()))
    ratio = min(ours) / min(theirs)
    assert 0.85 <= ratio <= 1.15, (ours, theirs, ratio)


def python_pipe_round_trips(cpu: int, chunks: int = 20, per_chunk: int = 1000) -> list[float]:
    """ns per 1-byte round trip over two os.pipe()s between two processes on one CPU,
    for each chunk of round trips."""
    a_r, a_w = os.pipe()
    b_r, b_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the echoing peer
        try:
            os.sched_setaffinity(0, {cpu})
            os.close(a_w)
            os.close(b_r)
            while c := os.read(a_r, 1):
                os.write(b_w, c)
        finally:
            os._exit(0)
    os.close(a_r)
    os.close(b_w)
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        for _ in range(200):
            os.write(a_w, b"x")
            os.read(b_r, 1)
        out = []
        for _ in range(chunks):
            t0 = time.perf_counter_ns()
            for _ in range(per_chunk):
                os.write(a_w, b"x")
                os.read(b_r, 1)
            out.append((time.perf_counter_ns() - t0) / per_chunk)
        return out
    finally:
        os.sched_setaffinity(0, saved)
        os.close(a_w)
        os.waitpid(pid, 0)
        os.close(b_r)


def test_pipe_round_trip_beats_a_python_ping_pong_and_is_in_a_sane_band(probe):
    """Peer: the same 1-byte ping-pong over two pipes written in Python, both ends on one
    CPU as the probe's with --pair-cpus, alternating three times. The interpreter adds
    its own cost to each of the four calls, so ours must be faster, yet not by more than
    a factor 2: the switches and pipe operations that dominate are the same (measured on
    this VM: probe 5.85-6.06 us, Python 6.85-6.94 us, ratio 0.85-0.88). On a busy machine one
    side's single fast round can swing a ratio of minimums, so the verdict is the median of the
    ratios of alternating pairs."""
    ours, theirs = [], []
    for _ in range(5):
        res = one(run_os(probe, "--tests", "pipe_lat", "--pair-cpus", str(CPU), "--quick"), "pipe_lat")
        assert res["transport"] == "pipe" and res["msg_bytes"] == 1 and res["cpus"] == [CPU, CPU]
        ours.append(res["min_ns"])
        theirs.append(min(python_pipe_round_trips(CPU)))
    ratio = statistics.median(a / b for a, b in zip(ours, theirs))
    assert 0.5 < ratio < 1.0, (ours, theirs, ratio)
    assert 500 < min(ours) < 200_000


@pytest.mark.functional
def test_transport_tests_report_latency_and_bandwidth(probe):
    recs = run_os(probe, "--tests", "unix_lat,tcp_lat,udp_lat,unix_bw,tcp_bw", "--quick")
    for test in ("unix_lat", "tcp_lat", "udp_lat"):
        assert 500 < one(recs, test)["min_ns"] < 10_000_000, test
    for test in ("unix_bw", "tcp_bw"):
        res = one(recs, test)
        assert res["chunk_bytes"] == 65536
        assert res["bandwidth_bps"] == pytest.approx(65536 * 1e9 / res["ns_per_op"], rel=1e-6)
        # Plausible on the least disturbed sample: the mean, which bandwidth_bps is, can hold a sample
        # that other load stretched many times over.
        assert 10e6 < 65536 * 1e9 / res["min_ns"] < 1e12, test


def test_file_tests_clean_up_their_scratch_directory(probe, tmp_path):
    recs = run_os(probe, "--tests", "stat,file_create_delete,mmap,file_reread,mmap_reread", "--dir", str(tmp_path),
                  "--file-sizes", "0,4k", "--mmap-sizes", "64k", "--reread-size", "1m", "--quick")
    assert recs[0]["params"]["dir"] == str(tmp_path)
    fcd = [(r["size_bytes"], r["op"]) for r in results(recs, "file_create_delete")]
    assert fcd == [(size, op) for size in (0, 4096) for op in ("create+delete", "create", "delete")]
    for r in results(recs, "file_create_delete"):
        assert r["files_per_s"] == pytest.approx(1e9 / r["ns_per_op"]), r
        assert r["op"] == "create+delete" or r["files_per_batch"] >= 1
    assert all(r["faults_per_map"] >= 1 for r in results(recs, "mmap"))
    assert all(r["bandwidth_bps"] > 50e6 for r in results(recs, "file_reread"))
    # A fresh mapping per pass pays faults and the unmapping; a mapping made once does not.
    reread = {r["mapping"]: r for r in results(recs, "mmap_reread")}
    assert reread["once"]["min_ns"] < reread["per pass"]["min_ns"], reread
    assert reread["per pass"]["bandwidth_bps"] > 50e6
    # Batch directories, files and the scratch directory itself: nothing is left.
    assert list(tmp_path.iterdir()) == []


ARITH_OPS = ("int_add", "int_bit", "int_mul", "int_div", "int_mod", "int64_add", "int64_bit", "int64_mul",
             "int64_div", "int64_mod", "float_add", "float_mul", "float_div", "double_add", "double_mul", "double_div")


def test_arithmetic_latencies_follow_the_hardware_and_a_call_is_cheaper_than_a_syscall(probe):
    """Ground truths of any processor: an add is one cycle, a division many; a multiply is
    not slower than a divide of the same type. One cycle lies between 0.05 ns (20 GHz) and
    5 ns (200 MHz): below, the compiler folded the chain (32 adds into one multiply would be
    a tenth of a cycle each). A procedure call stays inside the process, a null system call
    crosses into the kernel and back: the call is cheaper, and under 50 ns anywhere."""
    recs = run_os(probe, "--tests", "arith,proc_call,null", "--quick", "--max-time-s", "0.1")
    arith = {r["op"]: r for r in results(recs, "arith")}
    assert tuple(arith) == ARITH_OPS
    best = {op: r["min_ns"] for op, r in arith.items()}
    assert all(r["chain"] == 32 and r["samples"] == len(r["values_ns"]) for r in arith.values())
    assert 0.05 < best["int_add"] < 5, best
    # A bitwise link is one cycle as an add is; a 64-bit add or bit operation too, on any 64-bit core
    # and in two or three instructions on a 32-bit one: all far below a division of the same width.
    assert 0.05 < best["int_bit"] < 5 and 0.05 < best["int64_add"] < 15 and 0.05 < best["int64_bit"] < 15, best
    for fast, slow in (("int_add", "int_div"), ("int_bit", "int_div"), ("int_mul", "int_div"),
                       ("int64_add", "int64_div"), ("int64_bit", "int64_div"), ("int64_mul", "int64_div"),
                       ("float_add", "float_div"), ("double_mul", "double_div")):
        assert best[fast] < best[slow], (fast, slow, best)
    assert all(0.05 < v < 500 for v in best.values()), best
    # int_mod's links each carry an add, whose latency (int_add's figure) is taken off.
    assert arith["int_mod"]["add_subtracted_ns"] == pytest.approx(arith["int_add"]["ns_per_op"])
    assert arith["int64_mod"]["add_subtracted_ns"] == pytest.approx(arith["int64_add"]["ns_per_op"])
    assert all("add_subtracted_ns" not in r for op, r in arith.items() if not op.endswith("_mod"))
    call = one(recs, "proc_call")
    assert call["args"] == 3
    assert 0 < call["min_ns"] < min(50.0, one(recs, "null")["min_ns"]), (call["min_ns"], one(recs, "null")["min_ns"])


def test_semaphore_round_trip_and_tcp_connection_cost_more_than_their_system_calls(probe):
    """A semaphore round trip is four semop calls and two wake-ups; a TCP connection five
    calls (socket, connect, accept, two closes) with the handshake and teardown inside: each
    costs more than that many null system calls, measured in the same run."""
    recs = run_os(probe, "--tests", "null,tcp_connect,sem_lat", "--quick")
    null = one(recs, "null")["min_ns"]
    sem, conn = one(recs, "sem_lat"), one(recs, "tcp_connect")
    assert sem["semaphore"] == "System V" and sem["cpus"] is None
    assert conn["transport"] == "tcp" and conn["closes_first"] == "accepted end"
    assert 4 * null < sem["min_ns"] < 10_000_000, (null, sem["min_ns"])
    assert 5 * null < conn["min_ns"] < 10_000_000, (null, conn["min_ns"])


def test_open_to_close_passes_cost_the_open_and_close_on_top_of_the_read(probe, tmp_path):
    """LMbench's open2close passes do all an io_only pass does plus open and close (and
    the mapping's set-up for mmap), on the same cached file in the same run: slower per pass,
    so lower bandwidth. A 64 KiB file keeps the read short next to the open and close."""
    recs = run_os(probe, "--tests", "file_reread,mmap_reread", "--reread-size", "64k", "--dir", str(tmp_path),
                  "--quick")
    files = {r["scope"]: r for r in results(recs, "file_reread")}
    maps = {r["mapping"]: r for r in results(recs, "mmap_reread")}
    assert set(files) == {"io_only", "open2close"} and set(maps) == {"per pass", "once", "open2close"}
    assert files["open2close"]["min_ns"] > files["io_only"]["min_ns"], files
    assert maps["open2close"]["min_ns"] > maps["per pass"]["min_ns"] > maps["once"]["min_ns"], maps
    for r in (*files.values(), *maps.values()):
        assert r["size_bytes"] == 65536
        assert r["bandwidth_bps"] == pytest.approx(65536 * 1e9 / r["ns_per_op"], rel=1e-6)
    assert files["open2close"]["bandwidth_bps"] < files["io_only"]["bandwidth_bps"]


@pytest.mark.functional
def test_missing_loopback_skips_socket_tests_with_a_warning(probe):
    """In a fresh network namespace the loopback interface is down: tcp and udp cannot
    run, and say so instead of printing a figure; pipes still work."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) for a network namespace")
    recs = run_os(probe, "--tests", "pipe_lat,tcp_lat,udp_lat,tcp_connect", "--quick", prefix=("unshare", "--net"))
    skipped = {w["message"].split()[0] for w in recs if w["type"] == "warning" and w["code"] == "test_skipped"}
    assert skipped == {"tcp_lat", "udp_lat", "tcp_connect"}
    assert [r["test"] for r in recs if r["type"] == "result"] == ["pipe_lat"]


QEMU = "qemu-aarch64-static"


@pytest.mark.functional
def test_cross_built_os_runs_under_qemu_user(cross_probes):
    if shutil.which(QEMU) is None:
        pytest.skip(f"{QEMU} is installed by make setup")
    recs = run_os(cross_probes["aarch64"], "--tests", "null,pipe_lat", "--quick", prefix=(QEMU,))
    assert recs[0]["arch"] == "aarch64"
    assert [r["test"] for r in recs if r["type"] == "result"] == ["null", "pipe_lat"]
    for r in recs[1:-1]:
        assert r["type"] == "result" and r["ns_per_op"] > 0 and r["samples"] == len(r["values_ns"])


@pytest.mark.parametrize("args", [
    ["--tests", "nosuch"], ["--tests", ""], ["--fds", "0"], ["--fds", "2000"], ["--ctx", "1p/0k"],
    ["--ctx", "2p"], ["--ctx-cpu", "99999"], ["--mmap-sizes", "0"], ["--pagefault-size", "1k"],
    ["--bw-chunk", "x"], ["--dir", "/nonexistent/dir"], ["--max-time-s", "0"], ["--target-error", "2"],
    ["--pair-cpus", "0,"], ["--bogus"], ["extra"],
])
@pytest.mark.functional
def test_bad_options_exit_2_with_one_line_and_nothing_on_stdout(probe, args):
    assert_usage_error(probe, "os", args)


@pytest.mark.functional
def test_help_exits_0(probe):
    proc = subprocess.run([str(probe), "os", "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and "--tests" in proc.stdout and "mmap_reread" in proc.stdout
