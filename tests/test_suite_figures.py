"""Figures of the measurement-suite kinds, extracted from REAL probe output.

Each test runs `rtvb-probe` with the command line a campaign table produces (so the mapping of
keys to options is exercised against the probe itself), checks the records with the host's
stream checker, and feeds them through the analysis: every figure is the record's number in the
documented unit, and every name it yields is one `known_figure` (hence requirements) accepts.
"""

from __future__ import annotations

import subprocess

import pytest

from rtvbench.analysis.kind import get_kind
from rtvbench.analysis.metrics import known_figure, measurement_figures
from rtvbench.benchmarks import BENCHMARKS
from rtvbench.probe.stream import ProbeStream
from rtvbench.results import Measurement

pytestmark = pytest.mark.functional


def measure(probe, kind: str, table: dict, expect_rc: int = 0) -> Measurement:
    cls = BENCHMARKS.get(kind)
    bench = cls("b", cls.Params.model_validate(table))
    argv = [str(probe), *bench.probe_args()]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == expect_rc, (argv, proc.stderr)
    stream = ProbeStream(kind)
    records = [stream.feed(line) for line in proc.stdout.splitlines()]
    assert stream.end is not None
    return Measurement(id=1, environment="native", load="idle", benchmark="b", kind=kind, repetition=0,
                       status=stream.end["status"], command=argv, load_commands=[], started_at=None,
                       finished_at=None, meta=stream.meta, results=[r for r in records if r["type"] == "result"],
                       warnings=[r for r in records if r["type"] == "warning"])


def all_known(kind: str, figures: dict) -> None:
    unknown = [f for f in figures if not known_figure(kind, f)]
    assert not unknown, unknown


def result(m: Measurement, **match) -> dict:
    found = [r for r in m.results if all(r.get(k) == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


def test_work(probe):
    m = measure(probe, "work", {"kernels": ["crc32", "lu", "intmix"], "size": "small", "repetitions": 2})
    f = measurement_figures(m)
    all_known("work", f)
    crc, lu = result(m, kernel="crc32"), result(m, kernel="lu")
    assert crc["verified"] and lu["verified"]
    assert f["crc32.small"] == crc["median_ns"] and f["crc32.small_us"] == pytest.approx(crc["median_ns"] / 1e3)
    assert f["crc32.small.min"] == crc["min_ns"] <= f["crc32.small"]
    assert f["crc32.small.ops_per_s"] == crc["ops_per_s"]
    assert f["crc32.small.bw_MBps"] == pytest.approx(crc["bps"] / 1e6)     # a byte kernel has a bandwidth
    assert f["lu.small.flops"] == lu["flops"] and "lu.small.bw" not in f     # a flop kernel a flop rate
    assert "intmix.small.flops" not in f and "intmix.small.bw" not in f
    assert set(f) == {f"{k}.small{tail}" for k in ("crc32", "lu", "intmix")
                      for tail in ("", "_us", "_ms", ".min", ".min_us", ".min_ms", ".ops_per_s")} | {
        "crc32.small.bw", "crc32.small.bw_MBps", "crc32.small.bw_GBps", "lu.small.flops", "intmix.small.dmips_style"}
    kind = get_kind("work")
    assert kind.compared_figures(sorted(f)) == ["crc32.small", "intmix.small", "lu.small"]   # the probe's order
    assert (kind.unit("crc32.small"), kind.unit("crc32.small.bw_GBps"), kind.unit("lu.small.flops")) == \
        ("ns", "GB/s", "flop/s")
    for bad in ("crc32.medium", "nosuch.small", "lu.small.bw", "crc32.small.flops", "crc32.small.ops_per_s_us"):
        assert not known_figure("work", bad), bad


def test_work_with_a_wrong_expected_checksum_yields_no_figure_for_it(probe):
    m = measure(probe, "work", {"kernels": ["crc32", "sha256"], "size": "small", "repetitions": 1,
                                "expect": {"crc32.small": "1234"}}, expect_rc=3)
    assert m.status == "error"
    assert result(m, kernel="crc32")["verified"] is False and result(m, kernel="sha256")["verified"] is True
    f = measurement_figures(m)
    assert "sha256.small" in f and not any(name.startswith("crc32.") for name in f)
    from rtvbench.kinds.work.decode import verification
    checks = {c.workload: c for c in verification(m)}
    assert {w: c.verified for w, c in checks.items()} == {"sha256.small": True, "crc32.small": False}
    assert "differs from the expected 0000000000001234" in checks["crc32.small"].error


def test_mem_lat(probe):
    m = measure(probe, "mem-lat", {"sizes": ["4K", "96K"], "mode": "both", "quick": True})
    f = measurement_figures(m)
    all_known("mem-lat", f)
    for size, token in ((4096, "4KiB"), (98304, "96KiB")):
        for mode in ("seq", "random"):
            r = result(m, size_bytes=size, mode=mode)
            assert f[f"lat.{token}_{mode}"] == r["ns_per_access"]
            assert f[f"lat.{token}_{mode}_us"] == pytest.approx(r["ns_per_access"] / 1e3)
    assert len(f) == 2 * 2 * 3
    assert get_kind("mem-lat").compared_figures(sorted(f)) == [
        "lat.4KiB_seq", "lat.96KiB_seq", "lat.4KiB_random", "lat.96KiB_random"]
    for bad in ("lat.98304B_random", "lat.64MB_random", "lat.4KiB_stride", "lat.4KiB"):
        assert not known_figure("mem-lat", bad), bad


def test_mem_bw(probe):
    m = measure(probe, "mem-bw", {"operations": ["read", "memcpy", "rand_rd", "rand_wr"], "sizes": ["16K"],
                                  "quick": True})
    f = measurement_figures(m)
    all_known("mem-bw", f)
    for op in ("read", "memcpy", "rand_rd", "rand_wr"):
        r = result(m, op=op, thread="all")
        assert f[f"bw.{op}.16KiB"] == r["bps"]
        assert f[f"bw.{op}.16KiB_GBps"] == pytest.approx(r["bps"] / 1e9)
    assert len(f) == 4 * 3
    kind = get_kind("mem-bw")
    assert kind.table_stems(sorted(f)) == ["bw.read.16KiB", "bw.memcpy.16KiB", "bw.rand_rd.16KiB", "bw.rand_wr.16KiB"]
    assert kind.label("bw.rand_wr.16KiB") == "random-order write 16 KiB"
    assert not known_figure("mem-bw", "bw.copy.16KiB") and not known_figure("mem-bw", "bw.read.16KiB_us")


def test_mem_alloc(probe):
    m = measure(probe, "mem-alloc", {"sizes": ["2M"], "methods": ["mmap", "reuse"], "touch": ["page"],
                                     "iterations": 3, "tlb_lines": 512, "repetitions": 1, "quick": True})
    f = measurement_figures(m)
    all_known("mem-alloc", f)
    mmap, reuse, tlb = result(m, method="mmap"), result(m, method="reuse"), result(m, test="tlb")
    assert f["alloc.mmap.page.2MiB.cold"] == mmap["cold_median_ns"]
    assert f["alloc.mmap.page.2MiB.first_us"] == pytest.approx(mmap["first_ns"] / 1e3)
    assert "alloc.mmap.page.2MiB.warm" not in f          # mmap faults every cycle: no warm cycle, no figure
    assert f["alloc.reuse.page.2MiB.warm"] == reuse["warm_median_ns"]
    assert f["alloc.reuse.page.2MiB.cold_per_page"] == pytest.approx(reuse["cold_ns_per_page"])
    assert f["tlb.miss"] == tlb["tlb_miss_ns"] and f["tlb.spread"] == tlb["spread_ns_per_access"]
    # Over every cycle: figures of their own, shown in the section's Ave / Min / Max table, not the generic rows.
    assert (f["alloc.mmap.page.2MiB.avg"], f["alloc.mmap.page.2MiB.min"], f["alloc.mmap.page.2MiB.max"]) == \
        (mmap["avg_ns"], min(mmap["values_ns"]), max(mmap["values_ns"]))
    stems = get_kind("mem-alloc").table_stems(sorted(f))
    assert "alloc.mmap.page.2MiB.first" in stems and not any(s.endswith((".avg", ".min", ".max")) for s in stems)


ARITH = ("int_add", "int_bit", "int_mul", "int_div", "int_mod", "int64_add", "int64_bit", "int64_mul", "int64_div",
         "int64_mod", "float_add", "float_mul", "float_div", "double_add", "double_mul", "double_div")


def test_os(probe, tmp_path):
    m = measure(probe, "os", {"tests": ["null", "select", "pagefault", "mmap", "file_create_delete", "ctx",
                                        "pipe_lat", "tcp_connect", "sem_lat", "pipe_bw", "file_reread", "mmap_reread",
                                        "proc_call", "arith"],
                              "quick": True, "fds": [10], "ctx": ["2p/0k"], "mmap_sizes": ["64K"],
                              "file_sizes": [0, "1K"], "pagefault_size": "1M", "reread_size": "64K",
                              "dir": str(tmp_path), "max_time_s": 0.02, "min_sample_ms": 1})
    f = measurement_figures(m)
    all_known("os", f)
    stems = {"null", "select.10fd", "select.10fd_file", "select.10fd_tcp", "pagefault.anon", "pagefault.file", "pagefault.file_read",
             "mmap.64KiB", "mmap.64KiB_sparse", "file_create_delete.0B", "file_create_delete.1KiB",
             "file_create.0B", "file_create.1KiB", "file_delete.0B", "file_delete.1KiB", "ctx.2p_0k", "pipe_lat",
             "tcp_connect", "sem_lat", "proc_call", *(f"arith.{op}" for op in ARITH)}
    bandwidths = {"pipe_bw", "file_reread", "file_reread.open2close", "mmap_reread", "mmap_reread.mapped",
                  "mmap_reread.open2close"}
    # LMbench gives file creation and deletion as files per second: so do these rows.
    rates = {"file_create.0B_per_s", "file_create.1KiB_per_s", "file_delete.0B_per_s", "file_delete.1KiB_per_s"}
    # A figure whose samples were clamped, or a ctx difference that cannot be told from zero (a busy machine's
    # luck), is no value: it is left out, and only such a one.
    from rtvbench.kinds.os.decode import _stem as os_stem
    dropped = {s for s in get_kind("os").not_values(m) if not s.endswith(".min")}
    for s in dropped:
        r = next(r for r in m.results if os_stem(r) == s)
        assert r["clamped_samples"] or (r["test"] == "ctx" and not r["converged"] and r["rel_error"] >= 0.5), (s, r)
    stems -= dropped
    assert {n for n in f if get_kind("os").split(n)[2] == "" and not n.endswith(".min")} == stems | bandwidths | rates
    # Every one is a row of the report's tables, creation and deletion apart, each with its own label.
    rows = get_kind("os").table_stems(sorted(f))
    assert set(rows) == stems | bandwidths | rates and len({get_kind("os").label(s) for s in rows}) == len(rows)
    assert rows.index("file_create_delete.0B") < rows.index("file_create.0B") < rows.index("file_delete.0B")
    for op in ("create", "delete"):
        made = result(m, test="file_create_delete", size_bytes=0, op=op)
        assert f[f"file_{op}.0B_per_s"] == made["files_per_s"] == pytest.approx(1e9 / made["ns_per_op"])
    assert get_kind("os").unit("file_create.0B_per_s") == "files/s"
    assert not get_kind("os").lower_is_better("file_delete.1KiB_per_s") and get_kind("os").lower_is_better("null")
    assert f["arith.int_div.min"] == result(m, test="arith", op="int_div")["min_ns"]
    assert f["file_reread.open2close"] == result(m, test="file_reread", scope="open2close")["bandwidth_bps"]
    assert f["mmap_reread.open2close_GBps"] == pytest.approx(
        result(m, test="mmap_reread", mapping="open2close")["bandwidth_bps"] / 1e9)
    assert f["tcp_connect_us"] == pytest.approx(result(m, test="tcp_connect")["ns_per_op"] / 1e3)
    assert f["null"] == result(m, test="null")["ns_per_op"] and f["null.min"] == result(m, test="null")["min_ns"]
    if "ctx.2p_0k" not in dropped:
        assert f["ctx.2p_0k_us"] == pytest.approx(result(m, test="ctx")["ns_per_op"] / 1e3)
    # LMbench's definitions: the batch deletion and the sparse mmap come from their own results.
    assert f["file_delete.1KiB"] == result(m, test="file_create_delete", size_bytes=1024, op="delete")["ns_per_op"]
    assert f["mmap.64KiB_sparse.min"] == result(m, test="mmap", touch="sparse")["min_ns"]
    assert f["pipe_bw_MBps"] == pytest.approx(result(m, test="pipe_bw")["bandwidth_bps"] / 1e6)
    assert "pipe_bw.min" not in f and not known_figure("os", "pipe_bw.min")
    assert get_kind("os").unit("pipe_bw") == "B/s" and get_kind("os").unit("null.min_us") == "us"
    for bad in ("select", "select.10", "ctx.2p/0k", "mmap.65536B", "null.max", "nosuch", "select.10fd_pipe",
                "mmap.64KiB_dense", "file_create", "pagefault", "prot_fault.x", "mmap_reread.once", "arith",
                "arith.int_pow", "file_reread.io_only", "tcp_connect.x", "file_reread.open2close.min",
                "file_create.0B_per_s.min", "file_create_delete.0B_per_s", "mmap.64KiB_per_s", "select.10fd_udp"):
        assert not known_figure("os", bad), bad


def test_ipc(probe):
    m = measure(probe, "ipc", {"transports": ["pipe", "unix"], "sizes": [16, "1K"], "count": 200, "warmup": 10})
    f = measurement_figures(m)
    all_known("ipc", f)
    r = result(m, transport="unix", size_bytes=1024)
    assert f["unix.1024B.p99"] == r["p99_ns"] and f["unix.1024B.p99_us"] == pytest.approx(r["p99_ns"] / 1e3)
    assert f["unix.1024B.count"] == 200 and f["pipe.16B.min"] <= f["pipe.16B.avg"] <= f["pipe.16B.max"]
    assert len(f) == 2 * 2 * (9 * 3 + 1)
    kind = get_kind("ipc")
    assert kind.compared_figures(sorted(f))[:3] == ["pipe.16B.avg", "pipe.16B.p99", "pipe.16B.max"]
    assert kind.samples_needed("unix.1024B.p999") == 1000 and kind.sample_count(m) == 200
    # Each (transport, size) is a distribution of its own: every round trip, percentiles as the probe's.
    dists = kind.decode(m).distributions
    assert sorted(dists) == ["pipe 1024 B", "pipe 16 B", "unix 1024 B", "unix 16 B"]
    assert all(h.total == 200 for h in dists.values())
    assert dists["unix 1024 B"].percentile(99) == pytest.approx(r["p99_ns"], rel=0.01)
    assert dists["unix 1024 B"].max_ns == r["max_ns"]
    for bad in ("unix.1KiB.p99", "unix.1024.p99", "unix.1024B.p95", "smoke.16B.avg"):
        assert not known_figure("ipc", bad), bad


def test_os_figures_that_did_not_settle_are_said_and_no_time_is_negative(probe):
    from types import SimpleNamespace

    m = measure(probe, "os", {"tests": ["null", "ctx"], "quick": True, "ctx": ["2p/0k"], "max_time_s": 0.02,
                              "min_sample_ms": 1})
    for r in m.results:
        if "ns_per_op" in r:
            assert isinstance(r["clamped_samples"], int) and r["clamped_samples"] >= 0, r
            assert r["ns_per_op"] >= 0 and r["min_ns"] >= 0 and min(r["values_ns"]) >= 0, r
            assert not (r["clamped_samples"] and r["converged"]), r
    # A ring whose correction swallowed the switch (as the 64 KiB rows once did), and a settled null.
    why = "the hop without a switch (the pipe and a 0-byte working-set read) costs 280 ns, and 3 of 5 ring samples"
    result(m, test="ctx").update(converged=False, clamped_samples=3, not_converged_reason=why)
    result(m, test="null").update(converged=True, clamped_samples=0)
    data = SimpleNamespace(measurements=lambda *args, **kwargs: [m])
    ((severity, topic, text),) = get_kind("os").extra_considerations(data, "b", [])
    assert (severity, topic) == ("warning", "convergence")
    assert "`ctx.2p_0k` in 1 repetition, the correction as large as the measurement in 1 (samples clamped at zero)" \
        in text and "`null`" not in text, text
    assert f"(the probe, in the last: {why})" in text, text
