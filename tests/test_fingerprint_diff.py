"""The environments' fingerprints side by side (exactly the differing rows highlighted in HTML, Markdown and
JSON), the preflight warnings at the top of the report, and the latency and overhead tables: wake-up latency per
environment (min/avg/max) and the percent-overhead tables."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest
from synthetic_runs import DEFAULT_CAMPAIGN, build_run, lognormal_latency

from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.fingerprint import fingerprint_diff
from rtvbench.kinds.latency.pooled import latency_by_environment
from rtvbench.units import format_percent
from rtvbench.report import render

NATIVE = {
    "type": "sysinfo", "hostname": "rig", "kernel_release": "6.1.0-rt7", "kernel_version": "#1 SMP PREEMPT_RT",
    "machine": "x86_64", "cmdline": "quiet isolcpus=3", "preempt_model": "rt", "preempt_source": "/sys/kernel/realtime",
    "hypervisor": {"cpuid_bit": False, "cpuid_vendor": None, "sys_hypervisor_type": None,
                   "dmi_sys_vendor": "Dell Inc.", "dmi_product_name": "OptiPlex 7090", "dt_model": None,
                   "dt_hypervisor_compatible": None, "container": None, "container_source": None},
    "clocksource": "tsc", "clocksource_available": ["tsc", "hpet"], "clock_resolution_ns": 1,
    "cpu_model": "Intel(R) Core(TM) i7-10700", "cpu_implementer": None, "cpu_part": None, "cpu_isa": None,
    "cpus_online": "0-3", "cpus_online_count": 4, "cpus_allowed": "0-3", "cpus_allowed_count": 4,
    "cpus_isolated": "3", "nohz_full": "3", "smt_control": "off", "scaling_driver": "intel_pstate",
    "scaling_governors": {"0": "performance", "1": "performance", "2": "powersave", "3": "powersave"},
    "cpuidle": {"driver": "intel_idle", "governor": "menu", "cpu": 0,
                "states": [{"name": "POLL", "exit_latency_us": 0, "disabled": False},
                           {"name": "C6", "exit_latency_us": 170, "disabled": True}]},
    "sched_rt_runtime_us": -1, "sched_rt_period_us": 1000000, "mem_total_bytes": 16 << 30,
    "mem_available_bytes": 12 << 30, "thp_enabled": "always", "thp_defrag": "madvise", "page_size_bytes": 4096,
    "cgroup": {"version": 2, "cpu_max": None, "memory_max": None, "cpuset_cpus": None},
}
# The same kernel and CPU model in a KVM guest: what differs is what virtualisation changes.
GUEST = copy.deepcopy(NATIVE)
GUEST.update({
    "hostname": "vm", "kernel_version": "#1 SMP PREEMPT_RT", "clocksource": "kvm-clock",
    "clocksource_available": ["kvm-clock", "tsc"], "cpus_online": "0-1", "cpus_online_count": 2,
    "cpus_allowed": "0-1", "cpus_allowed_count": 2, "cpus_isolated": "", "nohz_full": "", "cmdline": "quiet",
    "scaling_driver": None, "scaling_governors": None, "cpuidle": None, "mem_total_bytes": 2 << 30,
    "mem_available_bytes": 1 << 30,
    "hypervisor": dict(NATIVE["hypervisor"], cpuid_bit=True, cpuid_vendor="KVMKVMKVM", dmi_sys_vendor="QEMU",
                       dmi_product_name="Standard PC (Q35 + ICH9, 2009)"),
})
TARGETS = {"native": {"target": "local", "hostname": "rig", "arch": "x86_64", "rtvbench_host": True},
           "guest": {"target": "qemu", "arch": "x86_64", "accel": "tcg", "emulated": True, "kernel": "bzImage", "cpus": 2,
                     "memory_mb": 2048, "count": 1, "boot_s": 1.9, "qemu": "QEMU emulator version 7.2.11"}}
METAS = {e: {"type": "meta", "probe_version": "0.1.0", "subcommand": "sysinfo", "privileges": {"euid": 0}}
         for e in ("native", "guest")}

#: the key facts whose values differ between NATIVE/TARGETS["native"] and GUEST/TARGETS["guest"]
DIFFERING_FACTS = ["Target", "Accelerator", "Boot time", "Host name", "Hypervisor", "Clocksource", "CPUs online",
                   "Isolated CPUs", "nohz_full", "CPU frequency governor", "Idle states", "Memory"]
EQUAL_FACTS = ["Architecture", "Kernel release", "Preemption model", "CPU model", "Transparent huge pages",
               "RT throttling", "cgroup limits", "Probe privileges"]
#: other recorded fields that differ (sysinfo, target., probe.); everything else is equal
DIFFERING_FIELDS = ["clocksource_available", "cmdline", "mem_available_bytes", "target.count",
                    "target.emulated", "target.kernel", "target.qemu", "target.rtvbench_host"]


@pytest.fixture(scope="module")
def run():
    r = build_run(copy.deepcopy(DEFAULT_CAMPAIGN), samples=4_000,
                  fingerprints={"native": NATIVE, "guest": GUEST})
    r.targets, r.fingerprint_meta = copy.deepcopy(TARGETS), copy.deepcopy(METAS)
    return r


@pytest.fixture(scope="module")
def outputs(run):
    return {fmt: render(run, fmt) for fmt in ("html", "md", "json")}


def test_diff_rows_and_their_summaries():
    d = fingerprint_diff(["native", "guest"], {"native": NATIVE, "guest": GUEST}, TARGETS, METAS)
    facts = {r.label: r for r in d.rows if r.key_fact}
    assert [label for label, r in facts.items() if r.differs] == DIFFERING_FACTS
    assert [label for label, r in facts.items() if not r.differs] == EQUAL_FACTS
    assert sorted(r.label for r in d.rows if not r.key_fact and r.differs) == DIFFERING_FIELDS
    v = {label: r.values for label, r in facts.items()}
    assert v["Accelerator"] == ["–", "tcg"]
    assert v["Boot time"] == ["–", "1.90 s"]        # QEMU start to the probe's ready line
    assert v["Hypervisor"] == ["Dell Inc. OptiPlex 7090 (DMI)",
                               "KVMKVMKVM (CPUID); QEMU Standard PC (Q35 + ICH9, 2009) (DMI)"]
    assert v["CPUs online"] == ["4 (0-3)", "2 (0-1)"]
    assert v["Isolated CPUs"] == ["3", "none"]
    assert v["CPU frequency governor"] == ["performance on 0-1; powersave on 2-3 (intel_pstate)", "no cpufreq"]
    assert v["Idle states"] == ["intel_idle/menu: POLL 0 us, C6 170 us (disabled)", "no cpuidle"]
    assert v["Memory"] == ["16.0 GiB", "2.0 GiB"]
    assert v["Transparent huge pages"] == ["always (defrag madvise)"] * 2
    assert v["RT throttling"] == ["off", "off"]
    assert v["Probe privileges"] == ["root", "root"]
    # A summarised field is not repeated among the other fields.
    others = {r.label for r in d.rows if not r.key_fact}
    assert not others & {"kernel_release", "hostname", "hypervisor.cpuid_vendor", "scaling_governors.0",
                         "target.accel", "probe.privileges.euid", "thp_enabled"}
    assert {"kernel_version", "page_size_bytes", "probe.probe_version", "smt_control"} <= others


def test_one_environment_differs_nowhere_and_missing_facts_are_dropped():
    d = fingerprint_diff(["native"], {"native": NATIVE}, {"native": TARGETS["native"]})
    assert not d.differing
    assert "Accelerator" not in [r.label for r in d.rows] and "Probe privileges" not in [r.label for r in d.rows]
    assert fingerprint_diff(["native"], {}) is None


def _html_rows(html: str) -> list[tuple[str, str]]:
    start = html.index('id="fingerprints"')
    table = html[start:html.index("</table>", start)]
    rows = re.findall(r"<tr(?: class=\"([^\"]*)\")?>\s*<td>(.*?)</td>", table, re.S)
    return [(css, re.sub(r"</?code>", "", label)) for css, label in rows]


def test_html_highlights_exactly_the_differing_rows(outputs):
    rows = _html_rows(outputs["html"])
    highlighted = [label for css, label in rows if css == "differs"]
    assert highlighted == DIFFERING_FACTS + DIFFERING_FIELDS
    assert [label for css, label in rows if css == "same"] == EQUAL_FACTS
    assert len(rows) == len(DIFFERING_FACTS + DIFFERING_FIELDS + EQUAL_FACTS)
    html = outputs["html"]
    assert f"Environment fingerprints: {len(DIFFERING_FACTS + DIFFERING_FIELDS)} rows differ (highlighted)" in html
    # The equal other fields are collapsed below the table, not rows of it.
    details = html[html.index('id="fingerprint-equal"'):html.index("</details>")]
    assert "<dt>kernel_version</dt><dd>#1 SMP PREEMPT_RT</dd>" in details and "<dt>cmdline</dt>" not in details
    assert "tr.differs td" in html and "tr.same td" in html


def test_markdown_marks_exactly_the_differing_rows(outputs):
    md = outputs["md"]
    section = md[md.index("## 2. Environments"):md.index("## 3.")]
    marked = [re.sub(r"\\|`", "", m) for m in re.findall(r"^\| \*\*≠ (.*?)\*\* \|", section, re.M)]
    assert marked == DIFFERING_FACTS + DIFFERING_FIELDS
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| Field")]
    assert len(rows) == len(DIFFERING_FACTS + DIFFERING_FIELDS + EQUAL_FACTS)
    assert "| **≠ Accelerator** | **–** | **tcg** |" in section
    assert "| Kernel release | 6.1.0-rt7 | 6.1.0-rt7 |" in section
    assert "- `kernel_version`: #1 SMP PREEMPT\\_RT" in section


def test_json_holds_the_diff(outputs):
    doc = json.loads(outputs["json"])
    fp = doc["fingerprint"]
    assert fp["environments"] == ["native", "guest"]
    assert [r["label"] for r in fp["rows"] if r["differs"] and r["key_fact"]] == DIFFERING_FACTS
    [accel] = [r for r in fp["rows"] if r["label"] == "Accelerator"]
    assert accel["values"] == {"native": "–", "guest": "tcg"}


def test_preflight_warnings_are_at_the_top_of_every_format(outputs):
    doc = json.loads(outputs["json"])
    assert [(w["environment"], w["code"]) for w in doc["preflight"]] == [
        ("native", "governor"), ("native", "thp_always"), ("guest", "tcg"), ("guest", "thp_always")]
    html, md = outputs["html"], outputs["md"]
    top = html[:html.index('id="verdicts"')]
    assert top.count('<li class="warning">') == 4 and 'id="preflight"' in top
    assert "<li class=\"warning\"><code>guest</code> is a QEMU guest under TCG" in top
    assert "The CPU frequency governor in <code>native</code> is not <code>performance</code>" in top
    assert "measure an emulator, not the hypervisor" in top
    head = md[:md.index("**Requirement verdicts**")]
    assert head.count("- ⚠ ") == 4 and "`powersave` on CPUs 2-3" in head


def test_observed_refusals_reach_the_report():
    refused = {("guest", "idle"): [{"code": "no_rt_policy", "message": "SCHED_FIFO was refused; run as root."}]}
    r = build_run(copy.deepcopy(DEFAULT_CAMPAIGN), samples=500, repetitions=3, warnings=refused,
                  fingerprints={"native": NATIVE, "guest": GUEST})
    r.targets, r.fingerprint_meta = copy.deepcopy(TARGETS), copy.deepcopy(METAS)
    doc = json.loads(render(r, "json"))
    [w] = [w for w in doc["preflight"] if w["code"] == "no_rt_priority"]
    assert w["environment"] == "guest" and "refused in 3 of 6 measurements" in w["message"]
    [row] = [x for x in doc["fingerprint"]["rows"] if x["label"] == "Probe privileges"]
    assert row["values"] == {"native": "root; real-time priority granted in all 6 measurements",
                             "guest": "root; real-time priority refused in 3 of 6 measurements"}


def test_a_run_stored_without_describe_and_meta_still_reports(outputs):
    # Runs stored before describe() and meta were read back: the sysinfo rows alone, no error.
    r = build_run(copy.deepcopy(DEFAULT_CAMPAIGN), samples=500, repetitions=3,
                  fingerprints={"native": NATIVE, "guest": GUEST})
    html = render(r, "html")
    labels = [label for _, label in _html_rows(html)]
    assert "Accelerator" not in labels and "Kernel release" in labels and "Target" not in labels


# ---------------------------------------------------------------------------
# Latency per environment and percent-overhead tables


def test_latency_per_environment_is_over_every_sample(run):
    data = RunData(run)
    rows = {(r.environment, r.load): r for r in latency_by_environment(data, "wakeup")}
    for (env, load), r in rows.items():
        ms = data.measurements(env, load, "wakeup", ("ok",))
        alls = [m.result("all") for m in ms]
        assert r.repetitions == len(ms) == 5 and r.samples == sum(a["count"] for a in alls)
        assert r.min_us == min(a["min_ns"] for a in alls) / 1000
        assert r.max_us == max(a["max_ns"] for a in alls) / 1000
        assert r.avg_us == pytest.approx(np.average([a["avg_ns"] for a in alls],
                                                    weights=[a["count"] for a in alls]) / 1000, rel=1e-12)


def test_table_5_2_shape_in_html_and_markdown(run, outputs):
    html, md = outputs["html"], outputs["md"]
    caption = "wakeup: wake-up latency per environment, 10 s per repetition, an interval of 200 us, priority 80 (fifo)"
    assert caption in html and caption in md.replace("\\", "")
    start = html.index(caption)
    table = html[start:html.index("</table>", start)]
    assert re.findall(r"<th>(.*?)</th>", table) == ["Environment", "Load", "Minimum latency (us)",
                                                    "Average latency (us)", "Maximum latency (us)", "Samples"]
    data = RunData(run)
    rows = latency_by_environment(data, "wakeup")
    body = re.findall(r"<tr>\s*<td>(\w+)</td><td>(\w+)</td>", table)
    assert body == [("native", "idle"), ("guest", "idle"), ("native", "stress"), ("guest", "stress")]
    [guest_stress] = [r for r in rows if (r.environment, r.load) == ("guest", "stress")]
    assert f"{guest_stress.max_us:,.0f}" in table and "20,000" in table


def test_no_table_5_2_with_one_environment():
    c = copy.deepcopy(DEFAULT_CAMPAIGN)
    del c["environments"]["guest"]
    r = build_run(c, samples=500, repetitions=3,
                  distributions={("native", "idle"): lognormal_latency(2_000)})
    assert "wake-up latency per environment" not in render(r, "html")


def test_overhead_tables_one_per_pair_with_ci_and_significance(run, outputs):
    html = outputs["html"]
    caption = "wakeup: <code>guest</code> against the baseline <code>native</code>, both under <code>idle</code>"
    start = html.index(caption)
    table = html[start:html.index("</table>", start)]
    assert re.findall(r"<th>(.*?)</th>", table) == [
        "Figure", "Unit", "native / idle (median)", "guest / idle (median)", "Δ median", "Overhead",
        "95 % CI", "p", "n", "Verdict"]
    from rtvbench.analysis.evaluation import evaluate_run
    ev = evaluate_run(run)
    [c] = [c for c in ev.comparisons if (c.axis, c.context, c.candidate, c.figure) == ("environment", "idle", "guest",
                                                                                       "p99_us")]
    t = c.test
    row = re.search(r"<tr class=\"[\w-]+\">\s*<td>p99 <code>p99_us</code></td>(.*?)</tr>", table, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert cells.pop(0) == "us"
    s_base = ev.summary("native", "idle", "wakeup", "p99_us")
    # One statistic throughout: the median beside the median-based overhead.
    assert s_base.median == t.baseline_median and cells[0].startswith(f"{s_base.median:.3g}"[:3])
    assert cells[3] == format_percent(t.overhead_percent)
    assert cells[4] == f"{format_percent(t.ci_percent[0])} .. {format_percent(t.ci_percent[1])}"
    assert cells[5] == f"{t.p_value:.3g}" and cells[6] == "5 vs 5" and cells[7] == t.verdict == "significant"
    # One table per compared pair: 2 loads x 1 candidate environment, 2 environments x 1 candidate load.
    assert html.count("against the baseline <code>native</code>") == 2
    assert html.count("load <code>stress</code> against <code>idle</code>") == 2
    assert "Environments compared with" not in html and "Environments compared with" not in outputs["md"]
