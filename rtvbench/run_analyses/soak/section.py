"""A soak's verdict laid out: the sentence, the environments' health, the trends of the worst
latency and of memory, in the summary and as the JSON document's `soak` key."""

from __future__ import annotations

from typing import Any

from rtvbench.report.run_section import RUN_SECTIONS, RunSection
from rtvbench.report.tables import Headline, Row, Table
from rtvbench.run_analyses.soak.analysis import SOAK, SoakVerdict, Trend
from rtvbench.units import counted, eta_text


def headline(v: SoakVerdict) -> str:
    span = f"{v.hours:.2f} h" if v.hours >= 1 else eta_text(v.hours * 3600)
    ran = f"The soak ran {span} ({counted(v.measurements, 'measurement')})"
    if v.stable:
        return (f"{ran}: stable. Every target answered every health check, none was lost, and neither the worst "
                "latency nor memory rose significantly.")
    return f"{ran}; what needs attention: " + "; ".join(v.findings) + "."


def _slope(t: Trend | None, unit: str) -> str:
    if t is None:
        return "–"
    if t.slope_per_h is None:
        return f"{counted(t.n, 'point')}: too few for a trend"
    return f"{t.slope_per_h:+.2f} {unit}/h (p = {t.p_value:.2g})" + (" rising" if t.rising else "")


def tables(v: SoakVerdict) -> list[Table]:
    health = Table("Soak: the environments' health", [
        "Environment", "Checks", "Failed", "Lost", "Recovered", "Used memory (MiB)", "Trend", "QEMU RSS (MiB)",
        "Trend"], [
        Row([e.environment, str(e.checks), str(e.failed_checks), str(e.lost), str(e.recovered),
             "–" if e.memory is None else f"{e.memory.first:.0f} -> {e.memory.last:.0f}", _slope(e.memory, "MiB"),
             "–" if e.qemu_rss is None else f"{e.qemu_rss.first:.0f} -> {e.qemu_rss.last:.0f}",
             _slope(e.qemu_rss, "MiB")], "fail" if e.lost or e.failed_checks else "")
        for e in v.environments], numeric_from=1, numeric_to=5,
        note="A health check asks each environment's probe to answer and reads its memory (and its guests' QEMU "
             "memory on this machine) between measurements. Lost: a measurement found the target gone; "
             "recovered: rtvbench brought it back (a fresh boot of a guest). Memory trends are judged on the "
             "checks since the last recovery; a local environment's memory is this machine's, shared with "
             "rtvbench and everything else running here, so it is shown but not judged.")
    out = [health]
    if v.latency:
        width = "hour" if v.bin_hours >= 1 else f"{v.bin_hours * 3600:.0f} s"
        out.append(Table("Soak: the worst wake-up over time", [
            "Benchmark", "Environment", "Load", "Measurements", f"Worst per {width} (us)", "Trend"], [
            Row([lt.benchmark, lt.environment, lt.load, str(lt.trend.n),
                 ", ".join(f"{val:.0f}" for _, val in lt.per_bin), _slope(lt.trend, "us")],
                "fail" if lt.trend.rising else "")
            for lt in v.latency], numeric_from=3, numeric_to=4,
            note="Each measurement's maximum wake-up latency against the time since the soak started: the "
                 "least-squares slope and its two-sided p (Student's t); \"rising\" when positive and p < 0.05."))
    return out


def document(v: SoakVerdict) -> dict[str, Any]:
    def tr(t: Trend | None):
        return None if t is None else {"n": t.n, "first": t.first, "last": t.last, "slope_per_h": t.slope_per_h,
                                       "p_value": t.p_value, "rising": t.rising}

    return {"hours": v.hours, "stable": v.stable, "findings": v.findings, "measurements": v.measurements,
            "failed_measurements": v.failed_measurements, "bin_hours": v.bin_hours,
            "environments": [{"environment": e.environment, "checks": e.checks, "failed_checks": e.failed_checks,
                              "lost": e.lost, "recovered": e.recovered, "memory_mib": tr(e.memory),
                              "qemu_rss_mib": tr(e.qemu_rss)} for e in v.environments],
            "worst_wakeup": [{"benchmark": lt.benchmark, "environment": lt.environment, "load": lt.load,
                         "max_us": tr(lt.trend), "per_bin": [[h, val] for h, val in lt.per_bin]}
                        for lt in v.latency]}


RUN_SECTIONS.register("soak")(RunSection(
    SOAK, headline=lambda ev, v: Headline("Soak", "soak", headline(v), tables(v)),
    json=lambda ev, v: {"soak": None if v is None else document(v)}))
