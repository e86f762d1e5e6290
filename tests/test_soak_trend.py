"""The soak analysis's trend (rtvbench/run_analyses/soak/analysis.py): its least-squares slope and
p-value against scipy's linear regression of the same points."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rtvbench.run_analyses.soak.analysis import MIN_POINTS, trend


def test_the_trend_is_scipys_linear_regression():
    rng = np.random.default_rng(7)
    for slope in (0.0, 0.3, -2.0):
        hours = np.sort(rng.uniform(0, 12, 20))
        values = 100 + slope * hours + rng.normal(0, 1.5, len(hours))
        got = trend(list(zip(hours.tolist(), values.tolist())))
        want = stats.linregress(hours, values)
        assert got.slope_per_h == pytest.approx(want.slope, rel=1e-9)
        assert got.p_value == pytest.approx(want.pvalue, rel=1e-6, abs=1e-12)


def test_an_exact_line_is_certain_and_a_short_series_has_no_slope():
    assert trend([(float(h), 5.0) for h in range(6)]).p_value == 1.0
    assert trend([(float(h), 5.0 + h) for h in range(6)]).p_value == 0.0
    short = trend([(float(h), 5.0 + h) for h in range(MIN_POINTS - 1)])
    assert short.slope_per_h is None and short.p_value is None
