"""The mapping format's `json_path`, JMESPath: the examples of docs/command.md read the numbers the
document holds; the dotted paths of before are read as they were, or refused with their JMESPath
spelling; and expressions built to ask for gigabytes or hours over a large output stop with one
sentence, within a bound of time and memory."""

from __future__ import annotations

import json
import re
import resource
import time
from pathlib import Path

import pytest

from rtvbench.campaign.reader import CampaignError, parse_campaign
from rtvbench.kinds.command.formats import MAX_OUTPUT_BYTES, FormatError, parse
from rtvbench.kinds.command.json_paths import MAX_STEPS, compile_path

pytestmark = pytest.mark.functional

DOC = (Path(__file__).resolve().parents[1] / "docs" / "command.md").read_text(encoding="utf-8").replace("\\|", "|")

HYPERFINE = {"results": [{"command": "sleep 0.01", "mean": 0.0123, "times": [0.011, 0.0125, 0.0134]},
                         {"command": "sleep 0.1", "mean": 0.1041, "times": [0.1, 0.1042, 0.1081]}]}
IPERF3 = {"end": {"streams": [{"sender": {"bytes": 1250000, "bits_per_second": 9.4e8}}],
                  "sum-sent": {"bytes": 1250000}, "sum_received": {"bits_per_second": "9.1e8"}}}


def _read(document, path: str) -> float:
    figures = [{"name": "v", "json_path": path, "unit": "count", "direction": "lower"}]
    return parse("mapping", json.dumps(document), figures).figures["v"]


# Every example docs/command.md gives, with the number it must read.
@pytest.mark.parametrize("document, path, expected", [
    (IPERF3, "end.streams[0].sender.bytes", 1250000),
    (HYPERFINE, "results[0].mean", 0.0123),
    (HYPERFINE, "results[-1].times[-1]", 0.1081),
    (HYPERFINE, "max(results[*].mean)", 0.1041),
    (HYPERFINE, "results[?command == 'sleep 0.1'].mean | [0]", 0.1041),
    (HYPERFINE, "length(results[].times[])", 6),
    (IPERF3, 'end."sum-sent".bytes', 1250000),
    (IPERF3, "end.sum_received.bits_per_second", 9.1e8),       # a numeric string is its number
])
def test_documented_examples_read_the_number_they_point_at(document, path, expected):
    assert _read(document, path) == pytest.approx(expected)
    assert f"`{path}`" in DOC, f"{path} is not among the examples of docs/command.md"


@pytest.mark.parametrize("path", ["results[0].mean", "results[1].times[2]", "end.streams[0].sender.bytes"])
def test_old_dotted_paths_of_identifiers_read_what_they_did(path):
    document = HYPERFINE if path.startswith("results") else IPERF3
    value = document
    for part in path.replace("[", ".").replace("]", "").split("."):
        value = value[int(part)] if part.isdigit() else value[part]
    assert _read(document, path) == value


def _validated(path: str) -> None:
    text = ('name = "v"\n[environments.native]\ntarget = "local"\n[benchmarks.t]\nkind = "command"\n'
            f'command = "true"\nformat = "mapping"\n[[benchmarks.t.figures]]\nname = "x"\njson_path = {json.dumps(path)}\n')
    parse_campaign(text, "c.toml")


@pytest.mark.parametrize("old, new", [("end.sum-sent.bytes", 'end."sum-sent".bytes'),
                                      ("stats.99.value", 'stats."99".value'),
                                      ("a.b c[2]", 'a."b c"[2]')])
def test_old_dotted_paths_JMESPath_reads_otherwise_are_refused_with_the_new_spelling(old, new):
    with pytest.raises(CampaignError) as e:
        _validated(old)
    assert e.value.exit_code == 2
    [line] = e.value.issue_lines()
    assert f"write it '{new}'" in line, line
    _validated(new)                                        # the spelling it gives is accepted


@pytest.mark.parametrize("path, reason", [
    ("a..b", "is not a JMESPath expression"),
    ("to_string(@)", "calls to_string, which makes text out of the output"),
    ("join(', ', results[*].command)", "calls join"),
    ("median(results[*].mean)", "calls median, which JMESPath has no function of that name for"),
    ("[" * 150 + "a" + "]" * 150, "nests more than 100 levels deep"),
    ("!" * 300 + "a", "nests more than 100 levels deep"),
    ("a" * 600, "more than the 500 a path may be"),
    ("abs(a, b)", "gives abs\\(\\) 2 arguments; it takes 1"),
])
def test_paths_refused_when_the_campaign_is_read(path, reason):
    with pytest.raises(ValueError, match=reason):
        compile_path(path)
    with pytest.raises(CampaignError) as e:
        _validated(path)
    assert e.value.exit_code == 2 and re.search(reason, e.value.issue_lines()[0])


def test_a_path_that_fails_on_the_output_is_one_sentence():
    with pytest.raises(FormatError) as e:
        _read(HYPERFINE, "abs(results)")
    said = str(e.value)
    assert said == "mapping: json_path abs(results) of figure v gives abs() array where it takes number."
    with pytest.raises(FormatError, match="leads to no number"):
        _read(HYPERFINE, "results[*].mean")


def _largest_document() -> str:
    """Just under the 16 MiB an output may have: a list of small objects, the most elements and
    containers per byte a tool's JSON is likely to have."""
    row = '{"a":[1,2,3,4,5,6,7,8,9],"b":"x"},'
    n = (MAX_OUTPUT_BYTES - 16) // len(row)
    return '{"rows":[' + row * (n - 1) + row[:-1] + "]}"


@pytest.mark.parametrize("path, expected", [
    ("@" + " | [@, @][]" * 40, "takes more than 10,000,000 steps"),    # a list that doubles at every stage
    ("rows" + " | [@, @, @, @][]" * 20, "takes more than 10,000,000 steps"),   # from the largest list
    ("length(rows[*].[a, a, a, a, a, a, a, a][][][])", "takes more than 10,000,000 steps"),
    ("max(map(&length(@), [rows, rows, rows, rows, rows, rows, rows, rows][]))", "takes more than"),
    ("sort_by(rows, &b)[0].a[8]", "read 9.0"),              # one pass of a sort, within the budget
])
def test_hostile_paths_over_the_largest_output_are_bounded(path, expected):
    text = _largest_document()
    assert len(text) <= MAX_OUTPUT_BYTES
    figures = [{"name": "v", "json_path": path, "unit": "count", "direction": "lower"}]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    try:
        parsed = parse("mapping", text, figures)
    except FormatError as e:
        said = str(e)
        assert "\n" not in said and said.startswith("mapping: ") and len(said) < 600, said
        shown = path if len(path) <= 80 else path[:77] + "..."
        assert said.startswith(f"mapping: json_path {shown} of figure v "), said   # not the JSON's limits
        outcome = said[len(f"mapping: json_path {shown} of figure v "):]
    else:
        outcome = f"read {parsed.figures['v']}"
    took = time.process_time() - start
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    print(f"{path[:50]}: {outcome[:80]}; {took:.1f} s of CPU, peak memory grown by {grown_mb:.0f} MB")
    assert outcome.startswith(expected), outcome
    assert took < 60                                       # a hang guard, not a speed claim
    # The parsed document is a few hundred MB of Python objects; the path's lists add at most
    # MAX_STEPS references of 8 bytes beyond it.
    assert grown_mb < 700 + MAX_STEPS * 8 / 2**20, grown_mb
