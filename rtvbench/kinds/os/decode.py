"""The `os` kind: per-operation cost of OS primitives (docs/probe/os-ipc.md).

Figures, ns per operation (the probe's `ns_per_op`; `_us`, `_ms` too), each with `.min`, the
least disturbed sample (the better estimate on a shared machine):
  `null`, `read`, `write`, `stat`, `fstat`, `open_close`, `sig_install`, `sig_catch`, `prot_fault`,
  `fork`, `fork_exec`, `fork_sh`, `pipe_lat`, `unix_lat`, `udp_lat`, `tcp_lat`,
  `tcp_connect`, `sem_lat`, `proc_call`, `arith.<op>` (`arith.int_add`, ... `arith.double_div`: the
  latency of one operation in a dependent chain),
  `select.<N>fd`, `poll.<N>fd`, `pagefault.anon`, `pagefault.file`, `mmap.<size>`,
  `file_create_delete.<size>`, `ctx.<P>p_<S>k` (e.g. `ctx.2p_0k`, `null.min`, `fork_us`);
  and the figures that follow LMbench's definitions where ours differ (docs/probe/os-ipc.md):
  `select.<N>fd_file`, `poll.<N>fd_file`, `select.<N>fd_tcp`, `poll.<N>fd_tcp`, `prot_fault.fault_only`,
  `pagefault.file_read`,
  `mmap.<size>_sparse`, `file_create.<size>`, `file_delete.<size>`;
rates, LMbench's way of giving file creation and deletion: `file_create.<size>_per_s`,
`file_delete.<size>_per_s` (files per second);
bandwidths, bytes per second (`_MBps`, `_GBps` too): `pipe_bw`, `unix_bw`, `tcp_bw`, `file_reread`,
`mmap_reread`, `mmap_reread.mapped`, and LMbench's open-to-close passes `file_reread.open2close`,
`mmap_reread.open2close`.
"""

from __future__ import annotations

import re
from typing import Any

from rtvbench.analysis.kind import register
from rtvbench.analysis.quantities import BANDWIDTH, RATE, TIME, QuantityKind, number
from rtvbench.units import human_size, parse_size_token, size_token
from rtvbench.catalog import OS_ARITH_OPS, OS_TESTS
from rtvbench.results import Measurement

_NAME = re.compile(r"^([a-z_]+)(?:\.(?!min$)([0-9a-zA-Z_]+))?(\.min)?$")
_FDS = r"[1-9][0-9]*fd(_file|_tcp)?"
# The name a descriptor kind adds to a select or poll figure: the probe's idle pipes have none.
_FD_KIND_SUFFIX = {"idle pipe": "", "regular file": "_file", "tcp socket": "_tcp"}
# Variants of a test's figures; a test listed in _PLAIN_TOO also has a figure without one.
_VARIANT = {
    "select": re.compile(rf"^{_FDS}$"), "poll": re.compile(rf"^{_FDS}$"),
    "pagefault": re.compile(r"^(anon|file|file_read)$"), "ctx": re.compile(r"^[0-9]+p_[0-9]+k$"),
    "prot_fault": re.compile(r"^fault_only$"), "mmap_reread": re.compile(r"^(mapped|open2close)$"),
    "file_reread": re.compile(r"^open2close$"), "arith": re.compile(rf"^({'|'.join(OS_ARITH_OPS)})$"),
}
_PLAIN_TOO = ("prot_fault", "mmap_reread", "file_reread")
# Figures named by a size, with the suffixes their other definitions add ("1MiB_sparse").
_SIZED = {"mmap": ("sparse",), "file_create_delete": (), "file_create": ("per_s",), "file_delete": ("per_s",)}
# LMbench's file-system figure is a rate: files created, or deleted, per second.
_PER_S = "per_s"
# Figure stems that are not test names, and the test that measures them.
_STEM_TEST = {"file_create": "file_create_delete", "file_delete": "file_create_delete"}
_ORDER = {t: i for i, t in enumerate(OS_TESTS)}
_ORDER.update({stem: _ORDER[test] for stem, test in _STEM_TEST.items()})
# Batch creation and deletion come after the one-at-a-time figure of the same size.
_AFTER = {"file_create": 1, "file_delete": 2}
_LABELS = {
    "null": "null syscall", "read": "read 1 B (/dev/zero)", "write": "write 1 B (/dev/null)", "stat": "stat",
    "fstat": "fstat", "open_close": "open + close", "sig_install": "signal handler install",
    "sig_catch": "signal catch", "prot_fault": "protection fault", "fork": "fork + exit",
    "fork_exec": "fork + exec", "fork_sh": "fork + /bin/sh -c", "pipe_lat": "pipe round trip",
    "unix_lat": "AF_UNIX round trip", "udp_lat": "UDP round trip", "tcp_lat": "TCP round trip",
    "pipe_bw": "pipe bandwidth", "unix_bw": "AF_UNIX bandwidth", "tcp_bw": "TCP bandwidth",
    "file_reread": "file re-read", "mmap_reread": "mmap re-read", "select": "select", "poll": "poll",
    "tcp_connect": "TCP connect + accept + close", "sem_lat": "System V semaphore round trip",
    "proc_call": "procedure call (3 arguments)", "arith": "latency of",
    "pagefault": "page fault", "mmap": "mmap", "file_create_delete": "file create + delete (one at a time)",
    "file_create": "file create (batch)", "file_delete": "file delete (batch)", "ctx": "context switch",
}
# How the variants that follow LMbench's definition read in a table.
_VARIANT_LABELS = {
    "fault_only": "the fault alone, signal cost subtracted", "mapped": "mapped once",
    "anon": "anon", "file": "file, write", "file_read": "file, read with fault-around",
    "open2close": "opened, read and closed every pass",
}


#: a difference's relative standard error from which it is within two standard errors of zero
NOISE_REL_ERROR = 0.5


def _not_a_value(r: dict[str, Any]) -> str | None:
    """Why a result's time is no measurement, or None. A sample the correction (the bare loop, the
    hop without a switch) took below zero was set to 0: averaged, those zeros make a figure of the
    noise ("0 us" in one repetition of ctx.4p_256k beside 2.9 in the others). A difference of two
    timings (ctx) whose standard error is half of it or more cannot be told from zero: the same noise
    without a zero to show it. One that merely missed the probe's 1 % target (3 % on a busy machine)
    is a value, read as an order of magnitude as the convergence warning says."""
    clamped, samples = r.get("clamped_samples"), r.get("samples")
    if isinstance(clamped, int) and not isinstance(clamped, bool) and clamped > 0:
        return (f"the subtracted cost was as large as the measurement in {clamped}"
                + (f" of {samples}" if isinstance(samples, int) else "") + " samples (clamped at 0)")
    error = number(r.get("rel_error"))
    if "overhead_subtracted_ns" in r and r.get("converged") is False and (error is None or error >= NOISE_REL_ERROR):
        # The probe's own account (not_converged_reason) is long; the consideration quotes it.
        return "the difference cannot be told from zero" + (
            f" ({error * 100:.0f} % standard error)" if error is not None and error != float("inf") else "")
    return None


def _stem(r: dict[str, Any]) -> str | None:
    """The figure name a result gives (without `.min`), None if unusable."""
    test = r.get("test")
    if test in ("select", "poll"):
        if not isinstance(r.get("fds"), int) or r.get("fd_kind", "idle pipe") not in _FD_KIND_SUFFIX:
            return None
        return f"{test}.{r['fds']}fd" + _FD_KIND_SUFFIX[r.get("fd_kind", "idle pipe")]
    if test == "pagefault":
        if r.get("backing") not in ("anon", "file"):
            return None
        return f"pagefault.{r['backing']}" + ("_read" if r.get("access") == "read" else "")
    if test == "prot_fault":
        return "prot_fault.fault_only" if r.get("handler") == "return" else "prot_fault"
    if test == "mmap_reread":
        variant = {"once": ".mapped", "open2close": ".open2close"}.get(r.get("mapping"), "")
        return "mmap_reread" + variant
    if test == "file_reread":
        return "file_reread.open2close" if r.get("scope") == "open2close" else "file_reread"
    if test == "arith":
        return f"arith.{r['op']}" if r.get("op") in OS_ARITH_OPS else None
    if test in _SIZED:
        if not isinstance(r.get("size_bytes"), int):
            return None
        size = size_token(r["size_bytes"])
        if test == "mmap":
            return f"mmap.{size}" + ("_sparse" if r.get("touch") == "sparse" else "")
        op = r.get("op")
        return f"file_{op}.{size}" if op in ("create", "delete") else f"{test}.{size}"
    if test == "ctx":
        procs, ws = r.get("procs"), r.get("ws_bytes")
        if isinstance(procs, int) and isinstance(ws, int) and ws % 1024 == 0:
            return f"ctx.{procs}p_{ws // 1024}k"
        return None
    return test if test in OS_TESTS else None


def _sized_variant(stem: str, variant: str) -> tuple[int, str] | None:
    """(size, suffix) of a sized figure's variant ("1MiB_sparse" -> (1048576, "sparse")), None if invalid."""
    size_part, _, suffix = variant.partition("_")
    size = parse_size_token(size_part)
    if size is None or (suffix and suffix not in _SIZED[stem]):
        return None
    return size, suffix


class OsKind(QuantityKind):
    name = "os"

    def quantities(self, m: Measurement) -> dict[str, tuple[str, float]]:
        out = {}
        for r in m.results:
            stem = _stem(r)
            if stem is None or _not_a_value(r):
                continue
            if OS_TESTS[r["test"]] == "bandwidth":
                v = number(r.get("bandwidth_bps"))
                if v is not None:
                    out[stem] = (BANDWIDTH, v)
                continue
            for name, field in ((stem, "ns_per_op"), (stem + ".min", "min_ns")):
                v = number(r.get(field))
                if v is not None:
                    out[name] = (TIME, v)
            rate = number(r.get("files_per_s"))
            if stem.startswith(("file_create.", "file_delete.")) and rate is not None:
                out[f"{stem}_{_PER_S}"] = (RATE, rate)
        return out

    def not_values(self, m: Measurement) -> dict[str, str]:
        out = {}
        for r in m.results:
            stem, why = _stem(r), _not_a_value(r)
            if stem is not None and why:
                out[stem] = out[stem + ".min"] = why
        return out

    def family(self, name: str) -> str | None:
        m = _NAME.match(name)
        if not m or (m.group(1) not in OS_TESTS and m.group(1) not in _STEM_TEST):
            return None
        stem, variant, is_min = m.group(1), m.group(2), m.group(3)
        test = _STEM_TEST.get(stem, stem)
        if stem in _VARIANT:
            ok = (bool(_VARIANT[stem].match(variant)) if variant is not None else stem in _PLAIN_TOO)
        elif stem in _SIZED:
            sized = _sized_variant(stem, variant) if variant is not None else None
            if sized is not None and sized[1] == _PER_S:
                return None if is_min else RATE
            ok = sized is not None
        else:
            ok = variant is None
        if not ok:
            return None
        if OS_TESTS[test] == "bandwidth":
            return None if is_min else BANDWIDTH
        return TIME

    def headline(self, name: str) -> bool:
        return not name.endswith(".min")

    def order(self, name: str) -> tuple:
        m = _NAME.match(name)
        if not m:
            return (999, name)
        stem, variant = m.group(1), m.group(2) or ""
        number_in = re.match(r"^[0-9]+", variant)
        sized = _sized_variant(stem, variant) if stem in _SIZED and variant else None
        key = sized[0] if sized else (int(number_in.group()) if number_in else 0)
        return (_ORDER.get(stem, 999), key, _AFTER.get(stem, 0), variant, m.group(3) or "")

    def rate_unit(self, stem: str) -> str:
        return "files/s"

    def label(self, figure: str) -> str:
        parts = self.split(figure)
        m = _NAME.match(parts[0]) if parts else None
        if not m:
            return figure
        stem, variant, is_min = m.groups()
        text = _LABELS.get(stem, stem)
        if variant:
            sized = _sized_variant(stem, variant) if stem in _SIZED else None
            if sized:
                shown = human_size(sized[0]) + {"sparse": ", sparse (one write per 16 KiB of the first tenth)",
                                                 _PER_S: ", files per second"}.get(sized[1], "")
            elif stem in ("select", "poll"):
                count, _, kind = variant.partition("fd")
                shown = f"{count} fds ({next(k for k, suffix in _FD_KIND_SUFFIX.items() if suffix == kind)})"
            elif stem == "ctx":
                shown = variant.replace("_", "/")
            elif stem == "arith":
                kind, _, op = variant.partition("_")
                shown = ({"int": "int (32-bit)", "int64": "int64"}.get(kind, kind) + " "
                         + {"bit": "bit (OR, AND)"}.get(op, op))
            else:
                shown = _VARIANT_LABELS.get(variant, variant)
            text += f" {shown}" if stem in ("select", "poll", "ctx", "arith") or sized else f", {shown}"
        return text + (" (fastest sample)" if is_min else "")

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or {}
        tests = p.get("tests") or list(OS_TESTS)
        timing = p.get("timing") or {}
        target = timing.get("target_rel_error")
        return (f"Cost of operating-system primitives (the families of LMbench's tables, own implementation): "
                f"{', '.join(tests)}. Each figure comes from the probe's timing harness: the operation runs in a "
                "calibrated loop whose bare cost is subtracted, sampled until the standard error of the mean is "
                f"below {f'{target * 100:g} %' if target else 'the target'} or the time limit is reached; the "
                "figure is the mean ns per operation (`.min`, the fastest sample, is the better estimate on a "
                "shared machine). `arith` figures are the latency of one operation in a dependent chain (32 per loop "
                "iteration, the loop not subtracted). Bandwidths (`*_bw`, re-reads) are bytes per second. Files "
                "live in the page cache; round trips and bandwidths are with a forked peer process.")

    def extra_considerations(self, data, bench: str, comps: list) -> list[tuple[str, str, str]]:
        """The figures whose measurement did not settle: their error stayed above the target (an order
        of magnitude, not a comparison), or the correction (the loop's cost, a ring's hop without a
        switch) was as large as the measurement, so samples were clamped at zero, or a difference did
        not converge (no value: left out of the cell's figures, _not_a_value). Where the probe said
        why (`not_converged_reason`, ctx), the last repetition's reason is quoted."""
        unsettled: dict[tuple[str, str], dict[str, list[tuple[int, str | None]]]] = {}
        for m in data.measurements(benchmark=bench, statuses=("ok",)):
            for r in m.results:
                stem = _stem(r)
                if stem is None or r.get("converged") is not False:
                    continue
                clamped = r.get("clamped_samples")
                reason = r.get("not_converged_reason")
                unsettled.setdefault((m.environment, m.load), {}).setdefault(stem, []).append(
                    (clamped if isinstance(clamped, int) and not isinstance(clamped, bool) else 0,
                     reason if isinstance(reason, str) and reason else None))
        out = []
        for (env, load), stems in unsettled.items():
            parts = []
            for stem in sorted(stems, key=self.order):
                runs = stems[stem]
                clamped = sum(1 for c, _ in runs if c)
                why = (f", the correction as large as the measurement in {clamped} (samples clamped at zero)"
                       if clamped else "")
                dropped = sum(1 for m in data.measurements(env, load, bench, ("ok",)) if stem in self.not_values(m))
                if dropped:
                    why += f"; {dropped} not a value, left out of its figures"
                reasons = [r for _, r in runs if r]
                said = f" (the probe, in the last: {reasons[-1]})" if reasons else ""
                parts.append(f"`{stem}` in {len(runs)} repetition{'s' if len(runs) != 1 else ''}{why}{said}")
            out.append(("warning", "convergence",
                        f"In `{env}` under `{load}`, these figures did not reach their error target: "
                        + "; ".join(parts) + ". Read them as orders of magnitude; differences in them are noise."))
        return out


register(OsKind())
