"""The machine-readable side of the CLI: `list`, `show` and `validate` with `--json`, `report -o -`, and
`check`, which owns the requirements' exit code (`report` exits 0 once it has written the report).
Ground truth: the JSON report of the same run, the campaign's own counts, and a requirement edited
to fail."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from rtvbench.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REPO = FIXTURES.parent.parent


def _store(tmp_path: Path, edit=lambda sql: sql) -> str:
    """A store holding one finished run (the old-store fixture: 8 measurements, one requirement)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    db = tmp_path / "s.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(edit((FIXTURES / "store-0003.sql").read_text(encoding="utf-8")))
    return f"sqlite:///{db}"


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    return exc.value.code, captured.out, captured.err


def test_list_and_show_as_json_agree_with_the_report(tmp_path, capsys):
    url = _store(tmp_path)
    code, out, err = _cli(capsys, "--store", url, "list", "--json")
    assert code == 0, err
    [run] = json.loads(out)
    assert (run["id"], run["campaign"], run["status"]) == (1, "old-store", "finished")
    assert run["measurements"] == run["measurements_ok"] == 8 and run["started_at"] < run["finished_at"]

    code, out, err = _cli(capsys, "--store", url, "show", "1", "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["environments"]["native"]["hostname"] == "vm" and shown["failed_attempts"] == []
    code, out, err = _cli(capsys, "--store", url, "report", "--format", "json", "-o", "-")
    assert code == 0, err
    report = json.loads(out)                  # stdout holds the document and nothing else
    assert len(shown["measurements"]) == len(report["measurements"]) == 8
    key = lambda m: (m["environment"], m["load"], m["benchmark"], m["repetition"])  # noqa: E731
    reported = {key(m): m for m in report["measurements"]}
    for m in shown["measurements"]:
        assert m["status"] == "ok" and m["figures"], m
        assert m["figures"] == pytest.approx(reported[key(m)]["figures"]), key(m)


def test_report_to_stdout_is_the_file_it_would_write(tmp_path, capsys):
    url = _store(tmp_path)
    code, out, err = _cli(capsys, "--store", url, "report", "--format", "md", "-o", "-")
    assert code == 0, err
    code, _, err = _cli(capsys, "--store", url, "report", "--format", "md", "-o", str(tmp_path / "r.md"))
    assert code == 0, err
    assert out == (tmp_path / "r.md").read_text(encoding="utf-8")


def test_check_owns_the_requirements_exit_code(tmp_path, capsys):
    # The fixture's requirement (wakeup.max_us <= 50000) passes; edited to 1 us it must fail.
    code, out, _ = _cli(capsys, "--store", _store(tmp_path), "check")
    assert code == 0 and "1 PASS, 0 FAIL" in out
    failing = _store(tmp_path / "failing", lambda sql: sql.replace("max = 50000", "max = 1"))
    code, out, _ = _cli(capsys, "--store", failing, "check")
    assert code == 1 and "0 PASS, 1 FAIL" in out
    code, out, err = _cli(capsys, "--store", failing, "report", "-o", str(tmp_path / "r.html"))
    assert code == 0, err                     # written, whatever the verdicts (which it also prints)
    assert "1 FAIL" in out and (tmp_path / "r.html").stat().st_size > 0


def test_validate_as_json_counts_what_the_campaign_runs(capsys):
    campaign = REPO / "examples" / "interference.toml"
    code, out, err = _cli(capsys, "validate", str(campaign), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["valid"] and doc["campaign"] == "interference" and doc["environments"] == ["native"]
    assert doc["loads"] == ["idle", "cpu_hog", "mem_hog", "cache_thrash", "fork_storm", "leak"]
    assert doc["benchmarks"] == ["victim"] and doc["repetitions"] == 5 and doc["requirements"] == 1
    assert doc["measurements"] == 1 * 6 * 1 * 5
    assert doc["expected_seconds"] >= 30 * 10                 # 30 measurements of 10 s each, at least
    code, out, _ = _cli(capsys, "validate", str(campaign))
    assert code == 0 and "= 30 measurements" in out


def test_junit_has_a_case_per_requirement_and_cell(tmp_path, capsys, monkeypatch):
    import xml.etree.ElementTree as ET

    def junit(url: str) -> ET.Element:
        code, out, err = _cli(capsys, "--store", url, "report", "--format", "junit", "-o", "-")
        assert code == 0, err
        [suite] = ET.fromstring(out).findall("testsuite")
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases) and suite.get("name") == "old-store"
        assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases)
        assert int(suite.get("skipped")) == sum(c.find("skipped") is not None for c in cases)
        return suite

    passing = junit(_store(tmp_path / "pass"))           # the requirement covers native under idle and cpu
    assert [c.get("name").rsplit("[", 1)[1] for c in passing.findall("testcase")] == ["native / idle]", "native / cpu]"]
    assert passing.get("failures") == passing.get("skipped") == "0"

    failing = junit(_store(tmp_path / "fail", lambda sql: sql.replace("max = 50000", "max = 1")))
    assert failing.get("failures") == "2"
    for case in failing.findall("testcase"):
        assert "repetition(s), max_us" in case.find("failure").get("message")

    # 2,400 samples per cell cannot support a bound on the p99.9999: INCONCLUSIVE, hence skipped, with why.
    undecided = junit(_store(tmp_path / "few", lambda sql: sql.replace(
        'metric = "wakeup.max_us"', 'metric = "wakeup.p999999_us"')))
    assert undecided.get("skipped") == "2" and undecided.get("failures") == "0"
    for case in undecided.findall("testcase"):
        assert case.find("skipped").get("message").startswith("INCONCLUSIVE: ")
        assert "fewer samples" in case.find("skipped").get("message")

    monkeypatch.chdir(tmp_path)                                    # the default file goes under the working directory
    code, out, _ = _cli(capsys, "--store", _store(tmp_path / "file"), "report", "--format", "junit")
    assert code == 0 and out.strip().endswith("old-store-1.xml")   # named .xml, not .junit
    assert ET.parse(out.strip().rsplit("Report: ", 1)[1]).getroot().tag == "testsuites"


def test_shell_completion_offers_commands_and_formats():
    import os
    import subprocess
    import sys

    def complete(words: str, cword: int) -> list[str]:
        env = dict(os.environ, COMP_WORDS=words, COMP_CWORD=str(cword), _RTVBENCH_COMPLETE="bash_complete")
        out = subprocess.run([sys.executable, "-m", "rtvbench"], env=env, capture_output=True, text=True,
                             timeout=30, cwd=REPO).stdout
        return [line.split(",", 1)[1] for line in out.splitlines()]

    assert complete("rtvbench re", 1) == ["report"]
    assert complete("rtvbench report --format ", 3) == ["html", "md", "csv", "json", "junit", "pdf"]


def test_tags_and_notes_are_stored_shown_and_select_runs(tmp_path, capsys):
    from rtvbench.campaign.reader import parse_campaign
    from rtvbench.store.db import open_store
    from rtvbench.store.writer import RunRecorder

    url = f"sqlite:///{tmp_path}/s.db"
    engine = open_store(url)
    campaign = parse_campaign('name = "bsp"\n[environments.native]\ntarget = "local"\n[benchmarks.w]\nkind = "latency"\n'
                              'duration_s = 1\n', "bsp.toml")
    for tags, note in (({"bsp": "5.1", "board": "a"}, None), ({"bsp": "5.2", "board": "a"}, "after the fix")):
        RunRecorder.create(engine, campaign, tags, note).set_status("finished")

    code, out, err = _cli(capsys, "--store", url, "list", "--json", "--tag", "bsp=5.2")
    assert code == 0, err
    [run] = json.loads(out)
    assert (run["id"], run["tags"], run["note"]) == (2, {"bsp": "5.2", "board": "a"}, "after the fix")
    code, out, _ = _cli(capsys, "--store", url, "list", "--json", "--tag", "board=a")
    assert [r["id"] for r in json.loads(out)] == [2, 1]
    code, out, _ = _cli(capsys, "--store", url, "list", "--tag", "board=b")
    assert code == 0 and "No run in the store has board=b." in out
    code, out, _ = _cli(capsys, "--store", url, "show", "2", "--json")
    assert json.loads(out)["note"] == "after the fix"
    code, out, _ = _cli(capsys, "--store", url, "show", "1")
    assert "Tags: bsp=5.1 board=a" in out

    for bad in (["list", "--tag", "bsp"], ["run", "--resume", "x.toml", "--tag", "bsp=5.3"]):
        code, _, err = _cli(capsys, "--store", url, *bad)
        assert code == 2 and ("not KEY=VALUE" in err or "a resumed run keeps its own" in err), err
