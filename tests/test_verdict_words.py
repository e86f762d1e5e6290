"""What the report says about a comparison follows its verdict: "no measurable harm" or "freedom from
interference" only from an equivalence shown within the margin and no extra misses; "cannot tell" with
its interval, repetitions and an estimate of how many would decide; a load that makes latency better
is suspicious, not an improvement."""

from __future__ import annotations

from rtvbench.analysis.compare import ratio_test
from rtvbench.kinds.latency.interference import AggressorRow, Ranking, ranking_findings

BASE = [100.0, 102.0, 98.0, 101.0, 99.0]


def _ranking(*rows: AggressorRow) -> list[Ranking]:
    baseline = AggressorRow("idle", True, 100.0, None, 0, [0] * 5)
    ordered = sorted([baseline, *rows], key=AggressorRow.sort_key)
    return [Ranking("victim", "native", "idle", "response_p999_us", "deadline_misses", ordered)]


def _row(load: str, values: list[float], misses: int = 0) -> AggressorRow:
    return AggressorRow(load, False, sorted(values)[2], ratio_test(BASE, values), misses, [misses] + [0] * 4)


def _text(ranked) -> str:
    return " ".join(f.text for f in ranking_findings(ranked, lambda f: "p99.9 response time"))


def test_a_load_below_the_baseline_with_more_misses_is_not_called_harmless():
    calm = _row("calm", [99.0, 101.0, 100.0, 98.5, 100.5], misses=80)
    text = _text(_ranking(calm))
    assert calm.test.verdict == "equivalent"
    assert "no measurable harm" not in text and "freedom from interference" not in text
    assert "more deadline misses than under `idle` (0) with `calm` (80)" in text


def test_harmless_only_when_equivalent_and_freedom_from_interference_only_when_all_are():
    same = _row("same", [100.5, 99.5, 101.0, 99.0, 100.0])
    assert same.test.verdict == "equivalent"
    assert "freedom from interference is shown at this margin" in _text(_ranking(same))

    noisy = _row("noisy", [60.0, 180.0, 90.0, 140.0, 75.0])
    assert noisy.test.verdict == "cannot tell"
    text = _text(_ranking(same, noisy))
    assert "freedom from interference" not in text
    assert "no measurable harm from `same` (equivalent within ±10 %)" in text
    assert f"cannot tell for `noisy`: `noisy` x{noisy.ratio:.3g}, 95 % CI" in text
    assert "from 5 vs 5 repetitions (about " in text and "repetitions per side would decide)" in text


def test_a_load_that_lowers_the_latency_significantly_is_suspicious():
    odd = _row("odd", [60.0, 61.0, 59.0, 60.5, 59.5])
    assert odd.test.verdict == "significant" and odd.ratio < 1
    text = _text(_ranking(odd))
    assert "significantly *lower*" in text and "Check the measurement conditions" in text
    assert "freedom from interference" not in text
