"""DMIPS-, MWIPS- and CoreMark-style rates of the `work` kind (docs/probe/work.md, "Rates on the
scale of published scores"): each follows from the probe's counts by its documented formula, and
each reaches every report format under its own name, never under the licensed benchmarks' ones."""

from __future__ import annotations

import csv
import html
import io
import json
import math

import pytest

from host_helpers import cli_env, run_cli, work_campaign
from rtvbench.analysis.kind import get_kind
from rtvbench.campaign.reader import CampaignError, parse_campaign
from rtvbench.results import Measurement

KIND = get_kind("work")


def measurement(*results: dict) -> Measurement:
    return Measurement(1, "native", "idle", "cpu", "work", 0, "ok", [], [], None, None, None, list(results))


def result(kernel: str, size: str = "large", **fields) -> dict:
    return {"type": "result", "kernel": kernel, "size": size, "verified": True, **fields}


@pytest.mark.functional
def test_a_known_iteration_count_and_time_give_the_stated_rates():
    # 6 000 000 intmix iterations in a median run of 0.5 s: 12 million iterations/s, / 1757.
    # 2 000 000 fpmix iterations of 51 counted operations in 0.25 s: 408 million per second, / 10^6.
    m = measurement(result("intmix", ops=6_000_000, median_ns=500_000_000, ops_per_s=12e6),
                    result("fpmix", ops=102_000_000, median_ns=250_000_000, ops_per_s=408e6),
                    result("crc32", ops=1000, median_ns=1000, ops_per_s=1e9))
    f = KIND.figures(m)
    assert f["intmix.large.dmips_style"] == pytest.approx(12e6 / 1757)
    assert f["fpmix.large.mwips_style"] == pytest.approx(408.0)
    # Each kernel has its own style, no other kernel any: crc32 is neither.
    assert not [n for n in f if n.endswith("_style") and not n.startswith(("intmix.", "fpmix."))]
    for bad in ("crc32.large.dmips_style", "intmix.large.mwips_style", "fpmix.small.dmips_style",
                "intmix.large.dmips"):
        assert not KIND.is_figure(bad), bad
    # A wrong result is not a rate: an unverified intmix gives no DMIPS-style figure.
    assert "intmix.large.dmips_style" not in KIND.figures(
        measurement(result("intmix", ops=6_000_000, median_ns=500_000_000, verified=False)))
    # Named so they cannot be taken for the licensed scores, and higher is better.
    assert KIND.unit("intmix.large.dmips_style") == "DMIPS-style"
    assert KIND.unit("fpmix.small.mwips_style") == "MWIPS-style"
    assert KIND.label("intmix.large.dmips_style") == "intmix (large) DMIPS-style rate"
    assert not KIND.lower_is_better("intmix.large.dmips_style") and not KIND.lower_is_better("fpmix.large.mwips_style")


@pytest.mark.functional
def test_the_composite_of_n_copies_is_the_geometric_mean_of_its_kernels_runs_per_second():
    copies = {"copies": 4, "scaling_efficiency": 0.9}
    m = measurement(result("crc32", "small", single_ips=1000.0, copies_ips=3000.0, **copies),
                    result("sha256", "small", single_ips=10.0, copies_ips=40.0, **copies),
                    result("lu", "small", single_ips=100.0, copies_ips=250.0, **copies),
                    result("crc32", "large", single_ips=2.0, copies_ips=8.0, **copies))
    f = KIND.figures(m)
    assert f["coremark_style.small.single"] == pytest.approx((1000 * 10 * 100) ** (1 / 3))
    assert f["coremark_style.small.copies"] == pytest.approx((3000 * 40 * 250) ** (1 / 3))
    assert f["coremark_style.large.single"] == pytest.approx(2.0)
    assert f["coremark_style.large.copies"] == pytest.approx(8.0)
    assert KIND.unit("coremark_style.small.copies") == "runs/s"
    assert KIND.label("coremark_style.small.copies") == "CoreMark-style composite (small), all copies"
    # One kernel failed: a mean over the others would be another composite, so that size has none.
    broken = measurement(result("crc32", "small", single_ips=1000.0, copies_ips=3000.0, **copies),
                         result("sha256", "small", single_ips=10.0, copies_ips=40.0, verified=False, **copies))
    assert not [n for n in KIND.figures(broken) if n.startswith("coremark_style.")]
    # A single-copy run has no composite.
    assert not [n for n in KIND.figures(measurement(result("crc32", "small", ops_per_s=5.0)))
                if n.startswith("coremark_style.")]
    assert math.isclose(f["coremark_style.small.single"], 100.0)


@pytest.mark.functional
def test_a_requirement_on_the_composite_needs_copies(tmp_path):
    text = work_campaign("r", 1) + '\n[[requirements]]\nmetric = "cpu.coremark_style.small.copies"\nmin = 1\n'
    with pytest.raises(CampaignError, match="exists only with copies: set copies to 2 or more"):
        parse_campaign(text, "r.toml", tmp_path)
    parse_campaign(text.replace('size = "small"', 'size = "small"\ncopies = 2'), "r.toml", tmp_path)


@pytest.mark.functional
def test_every_format_carries_the_style_rates(probe, tmp_path):
    """A real run of intmix, fpmix and crc32 with two copies: the style rates are in the JSON and
    CSV figures of every measurement, equal to the formula on the probe's own counts, and in the
    HTML and Markdown table that says what they are not."""
    (tmp_path / "c.toml").write_text(work_campaign("style", 1, kernels=["intmix", "fpmix", "crc32"], repetitions=2,
                                                   copies=2, rounds=1))
    env = cli_env(probe)
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", "--export-json", "r.json", cwd=tmp_path, env=env,
                timeout=100)
    assert r.returncode == 0, r.stderr
    [m] = json.loads((tmp_path / "r.json").read_text())["measurements"]
    figures = m["figures"]
    for name in ("intmix.small.dmips_style", "fpmix.small.mwips_style", "coremark_style.small.single",
                 "coremark_style.small.copies"):
        assert figures[name] > 0, name
    assert figures["coremark_style.small.copies"] == pytest.approx(
        math.prod(figures[f"{k}.small.copies_ips"] for k in ("intmix", "fpmix", "crc32")) ** (1 / 3))
    reports = {}
    for fmt in ("md", "csv", "html"):
        out = run_cli("report", "--store", "sqlite:///s.db", "--format", fmt, "-o", "-", cwd=tmp_path, env=env)
        assert out.returncode == 0, out.stderr
        reports[fmt] = out.stdout
    rows = {row[8]: row for row in csv.reader(io.StringIO(reports["csv"])) if len(row) > 8}
    assert float(rows["intmix.small.dmips_style"][9]) == pytest.approx(figures["intmix.small.dmips_style"], rel=1e-6)
    assert rows["intmix.small.dmips_style"][10] == "DMIPS-style"
    for fmt in ("md", "html"):
        text = html.unescape(reports[fmt]) if fmt == "html" else reports[fmt]
        assert "rates on the scale of published scores (this project's workloads, not those benchmarks)" in text
        for label in ("intmix (small) DMIPS-style rate", "fpmix (small) MWIPS-style rate",
                      "CoreMark-style composite (small), all copies"):
            assert label in text, (fmt, label)
