"""Change points (analysis.changes, `rtvbench history --changes`): a step planted in one board's nightly
runs is found between the two runs where it was planted, with the medians of both sides; the other
board's runs, drawn from one distribution, have none."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from history_store import STEP_RUN, history_store
from rtvbench.analysis.changes import step_indices
from rtvbench.cli import main

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return history_store(tmp_path_factory.mktemp("changes"))


def _cli(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    return exc.value.code, captured.out + captured.err


def test_a_planted_step_is_found_where_it_was_planted_and_flat_noise_has_none():
    rng = np.random.default_rng(3)
    flat = 100 + rng.normal(0, 2, 60)
    stepped = np.concatenate([flat[:35], flat[35:] + 10])
    ((index, p_value),) = step_indices(list(stepped))
    assert index == 35 and p_value < 1e-6
    assert step_indices(list(flat)) == []
    assert step_indices([1.0, 50.0]) == []          # too short to split


def test_history_changes_names_the_runs_around_the_step_in_json_and_text(store, capsys, tmp_path):
    code, text = _cli(capsys, "history", "wakeup.p50_us", "--changes", "--json", "--store", store)
    doc = json.loads(text)
    assert code == 0
    (change,) = doc["changes"]
    assert (change["environment"], change["load"]) == ("board_a", "idle")
    assert (change["run_before"], change["run_after"]) == (STEP_RUN - 1, STEP_RUN)
    assert change["compare"] == f"rtvbench compare {STEP_RUN - 1} {STEP_RUN}"
    # The body of the distribution rises by a third above a 0.8 us floor: the median by about +24 %.
    assert 15 < change["change_percent"] < 33 and change["p_value"] < 0.001
    a = next(s for s in doc["series"] if s["environment"] == "board_a")
    before = [p["median"] for p in a["points"][:STEP_RUN - 1]]
    assert min(before) <= change["median_before"] <= max(before)
    code, text = _cli(capsys, "history", "wakeup.p50_us", "--changes", "--environment", "board_b", "--json",
                      "--store", store)
    assert code == 0 and json.loads(text)["changes"] == []
    code, text = _cli(capsys, "history", "wakeup.p50_us", "--changes", "--store", store, "-o", str(tmp_path / "h.svg"))
    assert code == 0 and "Change points in wakeup.p50_us" in text and f"rtvbench compare {STEP_RUN - 1} {STEP_RUN}" in text
    code, text = _cli(capsys, "history", "wakeup.p50_us", "--json", "--store", store)
    assert "changes" not in json.loads(text)


def test_without_otava_changes_are_refused_in_one_sentence(store, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "otava.analysis", None)
    code, text = _cli(capsys, "history", "wakeup.p50_us", "--changes", "--json", "--store", store)
    assert code == 2 and "pip install 'rtvbench[changes]'" in text and "Traceback" not in text
