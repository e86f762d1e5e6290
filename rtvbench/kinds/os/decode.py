"""The `os` kind: per-operation cost of OS primitives (docs/probe/os-ipc.md).

Figures, ns per operation (the probe's `ns_per_op`; `_us`, `_ms` too), each with `.min`, the
least disturbed sample (the better estimate on a shared machine):
  `null`, `read`, `write`, `stat`, `fstat`, `open_close`, `sig_install`, `sig_catch`, `prot_fault`,
  `fork`, `fork_exec`, `fork_sh`, `pipe_lat`, `unix_lat`, `udp_lat`, `tcp_lat`,
  `select.<N>fd`, `poll.<N>fd`, `pagefault.anon`, `pagefault.file`, `mmap.<size>`,
  `file_create_delete.<size>`, `ctx.<P>p_<S>k` (e.g. `ctx.2p_0k`, `null.min`, `fork_us`);
bandwidths, bytes per second (`_MBps`, `_GBps` too): `pipe_bw`, `unix_bw`, `tcp_bw`, `file_reread`,
`mmap_reread`.
"""

from __future__ import annotations

import re
from typing import Any

from rtvbench.analysis.kind import register
from rtvbench.analysis.quantities import BANDWIDTH, TIME, QuantityKind, number
from rtvbench.units import human_size, parse_size_token, size_token
from rtvbench.catalog import OS_TESTS
from rtvbench.results import Measurement

_NAME = re.compile(r"^([a-z_]+)(?:\.(?!min$)([0-9a-zA-Z_]+))?(\.min)?$")
_VARIANT = {
    "select": re.compile(r"^[1-9][0-9]*fd$"), "poll": re.compile(r"^[1-9][0-9]*fd$"),
    "pagefault": re.compile(r"^(anon|file)$"), "ctx": re.compile(r"^[0-9]+p_[0-9]+k$"),
}
_SIZED = ("mmap", "file_create_delete")
_ORDER = {t: i for i, t in enumerate(OS_TESTS)}
_LABELS = {
    "null": "null syscall", "read": "read 1 B (/dev/zero)", "write": "write 1 B (/dev/null)", "stat": "stat",
    "fstat": "fstat", "open_close": "open + close", "sig_install": "signal handler install",
    "sig_catch": "signal catch", "prot_fault": "protection fault", "fork": "fork + exit",
    "fork_exec": "fork + exec", "fork_sh": "fork + /bin/sh -c", "pipe_lat": "pipe round trip",
    "unix_lat": "AF_UNIX round trip", "udp_lat": "UDP round trip", "tcp_lat": "TCP round trip",
    "pipe_bw": "pipe bandwidth", "unix_bw": "AF_UNIX bandwidth", "tcp_bw": "TCP bandwidth",
    "file_reread": "file re-read", "mmap_reread": "mmap re-read", "select": "select", "poll": "poll",
    "pagefault": "page fault", "mmap": "mmap", "file_create_delete": "file create + delete",
    "ctx": "context switch",
}


def _variant(r: dict[str, Any]) -> str | None:
    """The part of the figure name that tells results of one test apart, "" for none, None if unusable."""
    test = r.get("test")
    if test in ("select", "poll"):
        return f"{r['fds']}fd" if isinstance(r.get("fds"), int) else None
    if test == "pagefault":
        return r.get("backing") if r.get("backing") in ("anon", "file") else None
    if test in _SIZED:
        return size_token(r["size_bytes"]) if isinstance(r.get("size_bytes"), int) else None
    if test == "ctx":
        procs, ws = r.get("procs"), r.get("ws_bytes")
        if isinstance(procs, int) and isinstance(ws, int) and ws % 1024 == 0:
            return f"{procs}p_{ws // 1024}k"
        return None
    return ""


class OsKind(QuantityKind):
    name = "os"

    def quantities(self, m: Measurement) -> dict[str, tuple[str, float]]:
        out = {}
        for r in m.results:
            test = r.get("test")
            variant = _variant(r) if test in OS_TESTS else None
            if variant is None:
                continue
            stem = f"{test}.{variant}" if variant else test
            if OS_TESTS[test] == "bandwidth":
                v = number(r.get("bandwidth_bps"))
                if v is not None:
                    out[stem] = (BANDWIDTH, v)
                continue
            for name, field in ((stem, "ns_per_op"), (stem + ".min", "min_ns")):
                v = number(r.get(field))
                if v is not None:
                    out[name] = (TIME, v)
        return out

    def family(self, name: str) -> str | None:
        m = _NAME.match(name)
        if not m or m.group(1) not in OS_TESTS:
            return None
        test, variant, is_min = m.group(1), m.group(2), m.group(3)
        if test in _VARIANT:
            ok = variant is not None and bool(_VARIANT[test].match(variant))
        elif test in _SIZED:
            ok = variant is not None and parse_size_token(variant) is not None
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
        variant = m.group(2) or ""
        number_in = re.match(r"^[0-9]+", variant)
        size = parse_size_token(variant) if m.group(1) in _SIZED else None
        key = size if size is not None else (int(number_in.group()) if number_in else 0)
        return (_ORDER.get(m.group(1), 999), key, variant, m.group(3) or "")

    def label(self, figure: str) -> str:
        parts = self.split(figure)
        m = _NAME.match(parts[0]) if parts else None
        if not m:
            return figure
        test, variant, is_min = m.groups()
        text = _LABELS.get(test, test)
        if variant:
            size = parse_size_token(variant) if test in _SIZED else None
            shown = (human_size(size) if size is not None else
                     variant.replace("fd", " fds").replace("_", "/") if test != "pagefault" else variant)
            text += f" {shown}"
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
                "shared machine). Bandwidths (`*_bw`, re-reads) are bytes per second. Files live in the page "
                "cache; round trips and bandwidths are with a forked peer process.")

    def extra_considerations(self, data, bench: str, comps: list) -> list[tuple[str, str, str]]:
        """The figures whose measurement did not settle: their error stayed above the target, or the
        correction (the loop's cost, a ring's hop without a switch) was as large as the measurement, so
        samples were clamped at zero. Such a figure is an order of magnitude, not a comparison. Where the
        probe said why (`not_converged_reason`, ctx), the last repetition's reason is quoted."""
        unsettled: dict[tuple[str, str], dict[str, list[tuple[int, str | None]]]] = {}
        for m in data.measurements(benchmark=bench, statuses=("ok",)):
            for r in m.results:
                test = r.get("test")
                variant = _variant(r) if test in OS_TESTS else None
                if variant is None or r.get("converged") is not False:
                    continue
                stem = f"{test}.{variant}" if variant else test
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
                reasons = [r for _, r in runs if r]
                said = f" (the probe, in the last: {reasons[-1]})" if reasons else ""
                parts.append(f"`{stem}` in {len(runs)} repetition{'s' if len(runs) != 1 else ''}{why}{said}")
            out.append(("warning", "convergence",
                        f"In `{env}` under `{load}`, these figures did not reach their error target: "
                        + "; ".join(parts) + ". Read them as orders of magnitude; differences in them are noise."))
        return out


register(OsKind())
