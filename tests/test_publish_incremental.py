"""`rtvbench publish` into an earlier site reads from the store only the runs that are new or whose
measurements changed, renders only the figures they measured, and ends with the same site as a
first publish of the same store.

Ground truth: which runs were added or changed, by whom (a new run of another benchmark, a measurement
re-run in an old run as `run --resume` re-runs one), and a first publish of the final store into an
empty directory, in worker processes, whose every page the incrementally updated site must equal."""

from __future__ import annotations

import json

import pytest

from history_store import CAMPAIGN, history_store
from rtvbench.cli import main
from synthetic_runs import build_run, lognormal_latency, store_run

pytestmark = pytest.mark.functional

RUNS = 6
OTHER = CAMPAIGN.replace("[benchmarks.wakeup]", "[benchmarks.timer]").replace('name = "nightly"', 'name = "timers"')


def _publish(capsys, store: str, site, jobs: int = 1, *extra: str) -> dict:
    with pytest.raises(SystemExit) as exc:
        main(["publish", "-o", str(site), "--json", "--jobs", str(jobs), "--store", store, *extra])
    captured = capsys.readouterr()
    assert exc.value.code == 0, captured.err
    return json.loads(captured.out)


def _rerun_a_measurement(url: str, run_id: int) -> None:
    """A new attempt of board_a's first repetition in run `run_id`, ten times slower: its latest attempt
    replaces the first, so the run's measurement counts stay the same and only its content changes."""
    from rtvbench.campaign.reader import parse_campaign
    from rtvbench.store import open_store
    from rtvbench.store.writer import RunRecorder

    m = build_run(parse_campaign(CAMPAIGN).data, {("board_a", "idle"): lognormal_latency(20_000)},
                  repetitions=1, samples=1_000, seed=5).measurements[0]
    rec = RunRecorder(open_store(url), run_id).start_measurement(
        environment="board_a", load="idle", benchmark="wakeup", kind=m.kind, repetition=m.repetition, attempt=2,
        order_index=99, command=m.command, load_commands=m.load_commands)
    for seq, record in enumerate([m.meta, *m.windows, *m.results, {"type": "end", "status": "ok"}]):
        rec.add_record(seq, record)
    rec.finish("ok")


def _pages(site) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in site.rglob("*.html")}


def test_only_new_and_changed_runs_are_read_and_the_result_is_a_first_publish(tmp_path, capsys):
    from rtvbench.campaign.reader import parse_campaign
    from rtvbench.store import open_store

    url = history_store(tmp_path, runs=RUNS)
    site = tmp_path / "site"
    first = _publish(capsys, url, site)
    assert first["runs_read"] == list(range(1, RUNS + 1))
    wakeup_pages = {p for p in first["written"] if p.startswith("figures/wakeup.")}
    assert wakeup_pages

    again = _publish(capsys, url, site)
    assert again["runs_read"] == [] and again["written"] == []

    # A run of another campaign that measures another benchmark: it is the only run read, and no page
    # of the wakeup figures is made again.
    run = build_run(parse_campaign(OTHER).data, {("board_a", "idle"): lognormal_latency(2_000)},
                    repetitions=3, samples=1_000, seed=77, benchmark="timer")
    new = store_run(open_store(url), OTHER, run, {"kernel": "6.7"})
    after_new = _publish(capsys, url, site)
    assert after_new["runs_read"] == [new]
    written = set(after_new["written"])
    assert {f"runs/{new}.html", "index.html"} <= written and any(p.startswith("figures/timer.") for p in written)
    assert not written & wakeup_pages and wakeup_pages <= set(after_new["unchanged"])

    # A measurement of run 3 re-run: its counts are those of before, yet it is read again, its report
    # and the median of its point in board_a's p50 history are made again, and no other run's report.
    p50_before = (site / "figures" / "wakeup.p50_us.html").read_bytes()
    _rerun_a_measurement(url, 3)
    after_rerun = _publish(capsys, url, site)
    assert after_rerun["runs_read"] == [3]
    written = set(after_rerun["written"])
    assert {"runs/3.html", "figures/wakeup.p50_us.html"} <= written
    assert not {p for p in written if p.startswith("runs/")} - {"runs/3.html"}
    assert not {p for p in written if p.startswith("figures/timer.")}
    assert (site / "figures" / "wakeup.p50_us.html").read_bytes() != p50_before

    # Every page as a first publish of the final store gives it, read in two worker processes.
    fresh = _publish(capsys, url, tmp_path / "fresh", jobs=2)
    assert sorted(fresh["runs_read"]) == list(range(1, RUNS + 2))
    assert _pages(tmp_path / "fresh") == _pages(site)


def test_a_site_whose_kept_values_are_damaged_reads_every_run_again(tmp_path, capsys):
    url = history_store(tmp_path, runs=3)
    site = tmp_path / "site"
    _publish(capsys, url, site)
    pages = _pages(site)
    (site / "values.json").write_text('{"layout": 1, "runs": [')
    again = _publish(capsys, url, site)
    assert again["runs_read"] == [1, 2, 3] and again["written"] == [] and _pages(site) == pages
    # Under its own stamp, values that are not what a run gives: that run is read again.
    kept = json.loads((site / "values.json").read_text())
    kept["runs"]["2"]["values"] = [["wakeup", "latency", "board_a"]]
    (site / "values.json").write_text(json.dumps(kept))
    assert _publish(capsys, url, site)["runs_read"] == [2] and _pages(site) == pages
    # A figure's change points in the manifest, under its own digest, that are not rows of the changes
    # page: the figure is made again, the same.
    manifest = json.loads((site / "manifest.json").read_text())
    for figure in manifest["figures"].values():
        figure["changes"] = [{"started": None, "row": {}}]
    (site / "manifest.json").write_text(json.dumps(manifest))
    assert _publish(capsys, url, site)["written"] == [] and _pages(site) == pages


def test_asking_for_plots_renders_every_report_again_and_nothing_else(tmp_path, capsys):
    url = history_store(tmp_path, runs=2)
    site = tmp_path / "site"
    _publish(capsys, url, site)
    with_plots = _publish(capsys, url, site, 1, "--plots")
    assert with_plots["runs_read"] == [1, 2]
    assert sorted(with_plots["written"]) == ["runs/1.html", "runs/2.html"]
    assert _publish(capsys, url, site, 1, "--plots")["written"] == []
