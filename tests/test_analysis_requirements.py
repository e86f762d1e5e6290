"""Requirement verdicts: each rule's PASS, FAIL and INCONCLUSIVE case with its reason."""

from __future__ import annotations

import copy

from synthetic_runs import DEFAULT_CAMPAIGN, build_run, lognormal_latency

from rtvbench.analysis.evaluation import evaluate_run


def evaluate(run):
    """The verdicts, as every report format takes them: from the one evaluation of the run."""
    return evaluate_run(run).verdicts


def _run(requirements, **kw):
    campaign = copy.deepcopy(DEFAULT_CAMPAIGN)
    campaign["requirements"] = requirements
    kw.setdefault("samples", 20_000)
    return build_run(campaign, **kw)


def _one(req, **kw):
    [v] = evaluate(_run([req], **kw))
    assert v.requirement == req
    return v


def test_absolute_max_fails_on_the_worst_repetition():
    run = _run([{"metric": "wakeup.max_us", "environments": ["guest"], "loads": ["stress"], "max": 100}])
    worst = max(m.result("all")["max_ns"] for m in run.measurements
                if (m.environment, m.load) == ("guest", "stress")) / 1000
    [v] = evaluate(run)
    assert v.status == "FAIL"
    assert f"{worst:.0f} us" in v.reason and "max 100 us" in v.reason and "`guest`" in v.reason


def test_absolute_max_passes_when_every_repetition_is_below():
    run = _run([{"metric": "wakeup.max_us", "loads": ["idle"], "max": 100}])
    worst = max(m.result("all")["max_ns"] for m in run.measurements if m.load == "idle") / 1000
    [v] = evaluate(run)
    assert v.status == "PASS", v.reason
    assert "All 10 repetitions" in v.reason and f"{worst:.3g}" in v.reason
    # A maximum says nothing about events rarer than its samples: 10 repetitions of 20 000.
    assert "The bound held for the 200,000 samples measured: events rarer than about 1 in 100 000 are not covered" \
        in v.reason
    assert len(v.details) == 2      # native/idle and guest/idle


def test_absolute_min_bound_and_missing_bound():
    assert _one({"metric": "wakeup.count", "min": 20_000}).status == "PASS"
    assert _one({"metric": "wakeup.count", "min": 20_001}).status == "FAIL"
    v = _one({"metric": "wakeup.max_us"})
    assert v.status == "INCONCLUSIVE" and "neither `max` nor `min`" in v.reason


def test_percentile_bound_with_too_few_samples_is_inconclusive():
    v = _one({"metric": "wakeup.p99999_us", "loads": ["idle"], "max": 1000}, samples=20_000)
    assert v.status == "INCONCLUSIVE"
    assert "fewer samples (20,000)" in v.reason and "100,000" in v.reason
    # the same bound on p99.99 has enough samples
    assert _one({"metric": "wakeup.p9999_us", "loads": ["idle"], "max": 1000}).status == "PASS"


def test_no_data_and_failed_repetitions_are_inconclusive():
    v = _one({"metric": "wakeup.max_us", "environments": ["board"], "max": 100})
    assert v.status == "INCONCLUSIVE" and "no measurement in `board`" in v.reason
    v = _one({"metric": "wakeup.max_us", "loads": ["idle"], "max": 1000},
             status={("native", "idle", 2): "error"})
    assert v.status == "INCONCLUSIVE" and "repetition 3 failed" in v.reason
    v = _one({"metric": "wakeup.over_50us", "max": 0})
    assert v.status == "INCONCLUSIVE" and "report no over_50us" in v.reason
    v = _one({"metric": "nothing.max_us", "max": 1})
    assert v.status == "INCONCLUSIVE" and "no benchmark `nothing`" in v.reason


def test_interrupted_repetition_that_violates_still_fails():
    v = _one({"metric": "wakeup.max_us", "environments": ["guest"], "loads": ["stress"], "max": 100},
             status={("guest", "stress", r): "interrupted" for r in range(5)})
    assert v.status == "FAIL"


def test_deadline_counts_from_the_over_map():
    v = _one({"metric": "wakeup.over_100us", "loads": ["idle"], "max": 0})
    assert v.status == "PASS"
    v = _one({"metric": "wakeup.over_100us", "loads": ["stress"], "max": 0})
    assert v.status == "FAIL"


GUEST_SLOWER = {("native", "idle"): lognormal_latency(2_000, sigma=0.2),
                ("guest", "idle"): lognormal_latency(2_600, sigma=0.2)}   # body +~25 %


def _overhead(max_percent, **kw):
    kw.setdefault("distributions", GUEST_SLOWER)
    return _one({"overhead": "wakeup.avg_us", "baseline": "native", "candidate": "guest",
                 "loads": ["idle"], "max_percent": max_percent}, **kw)


def test_relative_pass_fail_and_straddle():
    fail = _overhead(10)
    assert fail.status == "FAIL" and "lies entirely above the 10 % bound" in fail.reason
    passed = _overhead(50)
    assert passed.status == "PASS" and "lies entirely within the 50 % bound" in passed.reason
    # read the interval off the reason and put the bound inside it
    ci = passed.reason.split("95 % CI ")[1].split(";")[0]
    lo, hi = (float(x.strip(" +%")) for x in ci.split(".."))
    assert lo < hi
    straddle = _overhead((lo + hi) / 2)
    assert straddle.status == "INCONCLUSIVE" and "straddles" in straddle.reason


def test_relative_with_too_few_repetitions_is_inconclusive():
    v = _overhead(50, repetitions=2)
    assert v.status == "INCONCLUSIVE"
    assert "only 2 baseline and 2 candidate repetitions" in v.reason and "point estimate +" in v.reason


def test_relative_with_unknown_environment_is_inconclusive():
    v = _one({"overhead": "wakeup.avg_us", "baseline": "native", "candidate": "vm9", "max_percent": 5})
    assert v.status == "INCONCLUSIVE" and "`vm9` has no data" in v.reason


def test_no_requirements_gives_no_verdicts():
    campaign = copy.deepcopy(DEFAULT_CAMPAIGN)
    del campaign["requirements"]
    assert evaluate(build_run(campaign, samples=1_000, repetitions=1)) == []


def test_relative_requirement_on_a_measurement_whose_cpus_were_taken_is_inconclusive():
    """An overhead measured while other processes had the candidate's CPUs is theirs as much as the
    platform's: INCONCLUSIVE with the conditions' reason, whatever the interval says."""
    req = {"overhead": "wakeup.p99_us", "baseline": "native", "candidate": "guest", "loads": ["idle"],
           "max_percent": 1000}
    run = _run([req])
    [clean] = evaluate(run)
    assert clean.status == "PASS", clean.reason

    def stat(busy, idle):
        base = {"user": 1000, "nice": 0, "system": 200, "idle": 5000, "iowait": 0, "irq": 0, "softirq": 0,
                "steal": 0, "guest": 0, "guest_nice": 0}
        return {line: dict(base, user=base["user"] + busy, idle=base["idle"] + idle) for line in ("cpu", "cpu0", "cpu1")}
    for m in run.measurements:
        if (m.environment, m.load) == ("guest", "idle"):
            # 60 % of both CPUs busy with processes while the probe used 2 % of one
            m.cpu_stat = {"before": stat(0, 0), "after": stat(60, 40)}
            m.end = {"type": "end", "status": "ok", "elapsed_ns": 1_000_000_000, "cpu_time_ns": 20_000_000}
    [v] = evaluate(run)
    assert v.status == "INCONCLUSIVE", v.reason
    assert "conditions not met in 5 of 5 repetitions of `wakeup` in `guest` under `idle`" in v.reason
    assert "went to processes other than the probe" in v.reason
