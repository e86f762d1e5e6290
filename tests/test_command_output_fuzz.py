"""Hostile stdout of a `command` benchmark: nested deep, beyond the size limit, with Infinity, NaN or
1e999 where a figure is read, histogram bins beyond any latency, thousands of threads, and a mapping
regex that backtracks catastrophically in Python's `re`. Seeded, in process for the many cases (each
output is read into figures or refused with a FormatError of one sentence, never another exception)
and end to end for a few: the run finishes, the hostile measurements are stored as failed with their
reason and the head of their output, the good one is ok, never an internal error."""

from __future__ import annotations

import json
import math
import random
import resource
import sqlite3
import time

import pytest

from host_helpers import cli_env, run_cli
from rtvbench.campaign.reader import CampaignError, parse_campaign
from rtvbench.kinds.command.formats import MAX_OUTPUT_BYTES, FormatError, parse
from rtvbench.runner.run import Runner
from rtvbench.targets import Completed
from rtvbench.store import load_run, open_store
from hostile_outputs import BASE, HOSTILE_NUMBERS, explosion, mutate

pytestmark = pytest.mark.functional

SEED = 20261128
CASES = 400
# Figures of a mapping over the outputs above: regexes and paths that find numbers in them.
MAPPING = [
    [{"name": "v", "regex": r"(?:mean|max|bogo-ops|sha256):?\s*\"?([^\s,\"}:]+)", "unit": "count", "direction": "lower"}],
    [{"name": "v", "regex": r"(a+)+$", "unit": "count", "direction": "lower"}],
    [{"name": "v", "json_path": "results[0].mean", "unit": "s", "direction": "lower"},
     {"name": "w", "json_path": "end.sum.lost_percent", "unit": "%", "direction": "lower"}],
]
BACKTRACKING = "a" * 200_000 + "!"


def _hostile_output(rng: random.Random) -> tuple[str, str, list | None]:
    if rng.randrange(5) == 0:                   # a mapping over any output
        figures = rng.choice(MAPPING)
        text = rng.choice([BACKTRACKING, mutate(rng, rng.choice(sorted(BASE)))])
        if rng.randrange(3) == 0:
            text = f"value: {rng.choice(HOSTILE_NUMBERS)}\nmean: {rng.choice(HOSTILE_NUMBERS)}\n" + text
        return "mapping", text, figures
    fmt = rng.choice(sorted(BASE))
    return fmt, mutate(rng, fmt), None


def test_hostile_outputs_are_read_soundly_or_refused_in_one_sentence():
    rng = random.Random(SEED)
    outcome = {"read": 0, "refused": 0}
    worst, worst_case = 0.0, ""
    start = time.process_time()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for i in range(CASES):
        fmt, text, figures = _hostile_output(rng)
        one = time.process_time()
        try:
            parsed = parse(fmt, text, figures)
        except FormatError as e:
            said = str(e)
            assert "\n" not in said and said.startswith(f"{fmt}: ") and len(said) < 600, said
            outcome["refused"] += 1
        else:
            assert parsed.figures and all(math.isfinite(v) for v in parsed.figures.values()), parsed.figures
            outcome["read"] += 1
        took = time.process_time() - one
        if took > worst:
            worst, worst_case = took, f"case {i} ({fmt})"
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    print(f"command output fuzz: {CASES} outputs, {outcome}, worst {worst:.2f} s of CPU ({worst_case}), "
          f"peak memory grown by {grown_mb:.0f} MB")
    assert outcome["read"] > CASES // 10 and outcome["refused"] > CASES // 3, outcome
    assert time.process_time() - start < 60         # a hang guard: the backtracking regex alone would never end
    assert grown_mb < 500, grown_mb


@pytest.mark.parametrize("fmt,text,figures,said", [
    ("cyclictest-json", '{"thread": ' + "[" * 100_000 + "]" * 100_000 + "}", None,
     "cyclictest-json: the JSON is nested more than 64 levels deep"),
    ("cyclictest-json", '{"thread": {"0": {"cycles": Infinity, "min": 1, "avg": 2, "max": 3}}}', None,
     "cyclictest-json: the JSON has Infinity, which is not a number JSON allows."),
    ("mapping", "rate: nan\n", [{"name": "rate", "regex": r"rate: (\S+)", "unit": "/s", "direction": "higher"}],
     "mapping: figure rate is nan, not a finite number."),
    ("mapping", "rate: 1e999\n", [{"name": "rate", "regex": r"rate: (\S+)", "unit": "/s", "direction": "higher"}],
     "mapping: figure rate is inf, not a finite number."),
    ("mapping", BACKTRACKING, [{"name": "a", "regex": r"(a+)+$", "unit": "count", "direction": "lower"}],
     "mapping: regex (a+)+$ of figure a matches nothing in the output."),
    ("cyclictest-json", json.dumps({"thread": {"0": {"cycles": 1, "min": 1, "avg": 1, "max": 1,
                                                     "histogram": {str(10**14): 1}}}}), None,
     "cyclictest-json: thread 0 has a histogram bin at 100000000000000 us, beyond the 3600000000 us (one hour)"),
    ("rtla-osnoise", explosion("rtla-osnoise", 10_000), None,
     "rtla-osnoise: the output has 513 CPU rows, more than the 512 one measurement may have."),
    ("hyperfine-json", "x" * (MAX_OUTPUT_BYTES + 1), None,
     "hyperfine-json: the output has 16,777,217 characters, more than the 16,777,216 one output may have."),
])
def test_a_hostile_output_is_refused_naming_the_rule(fmt, text, figures, said):
    with pytest.raises(FormatError) as e:
        parse(fmt, text, figures)
    assert str(e.value).startswith(said), str(e.value)


@pytest.mark.parametrize("regex,said", [
    (r"(a)\1", "is not a regular expression RE2 can run (invalid escape sequence: \\1; backreferences"),
    (r"(?=a)(b)", "is not a regular expression RE2 can run (invalid perl operator: (?=; backreferences"),
])
def test_validation_refuses_a_regex_re2_cannot_run(regex, said):
    text = ('name = "v"\n[environments.native]\ntarget = "local"\n[benchmarks.t]\nkind = "command"\n'
            f'command = "true"\nformat = "mapping"\n[[benchmarks.t.figures]]\nname = "x"\nregex = {json.dumps(regex)}\n')
    with pytest.raises(CampaignError) as e:
        parse_campaign(text, "c.toml")
    [line] = e.value.issue_lines()
    assert said in line, line


class _Stored:
    def __init__(self) -> None:
        self.records: list[dict] = []

    def add_record(self, seq: int, record: dict) -> None:
        self.records.append(record)


class _Breaking:
    """A benchmark whose parser has a bug."""

    max_stdout_bytes = MAX_OUTPUT_BYTES
    timeout_s = 10

    def parse(self, text: str) -> dict:
        raise KeyError("thread")


def test_any_exception_of_a_parser_fails_the_measurement_only():
    m = _Stored()
    status, error = Runner._external_outcome(m, _Breaking(), Completed(0, ""), ["out"], 4, None, None, None, 0.1)
    assert (status, error) == ("error", "reading the output failed (KeyError: 'thread')")
    assert m.records[0]["stdout"] == "out\n"


def _campaign(files: dict[str, tuple[str, str, list | None]]) -> str:
    lines = ['name = "hostile"', "[environments.native]", 'target = "local"']
    for bench, (command, fmt, figures) in files.items():
        lines += [f"[benchmarks.{bench}]", 'kind = "command"', f"command = {json.dumps(command)}",
                  f'format = "{fmt}"', "timeout_s = 60"]
        for figure in figures or []:
            lines += [f"[[benchmarks.{bench}.figures]]"] + [f"{k} = {json.dumps(v)}" for k, v in figure.items()]
    return "\n".join(lines) + "\n"


def test_hostile_outputs_fail_their_measurements_and_the_run_goes_on(tmp_path, probe):
    outputs = {
        "deep": '{"thread": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "infinite": '{"thread": {"0": {"cycles": Infinity, "min": 1, "avg": 2, "max": 3}}}',
        "nan": "rate: nan\n",
        "buckets": json.dumps({"thread": {"0": {"cycles": 1, "min": 1, "avg": 1, "max": 1,
                                                "histogram": {str(10**14): 1}}}}),
        "backtracking": BACKTRACKING,
        "good": BASE["hyperfine-json"],
    }
    for name, text in outputs.items():
        (tmp_path / name).write_text(text)
    rate = [{"name": "rate", "regex": r"rate: (\S+)", "unit": "/s", "direction": "higher"}]
    benchmarks = {
        "deep": ("cat deep", "cyclictest-json", None),
        "infinite": ("cat infinite", "cyclictest-json", None),
        "nan": ("cat nan", "mapping", rate),
        "buckets": ("cat buckets", "cyclictest-json", None),
        "backtracking": ("cat backtracking", "mapping", [{"name": "a", "regex": r"(a+)+$", "unit": "count",
                                                         "direction": "lower"}]),
        # Beyond the limit on stdout: some 17 MB of lines.
        "flood": (f"sh -c 'yes 0123456789abcdef | head -c {MAX_OUTPUT_BYTES + (1 << 20)}'", "mapping", rate),
        # 100 MiB in one line without a newline: read in pieces, never held whole.
        "one_line": ("sh -c 'head -c 104857600 /dev/zero | tr \\\\0 a'", "mapping", rate),
        "good": ("cat good", "hyperfine-json", None),
    }
    (tmp_path / "c.toml").write_text(_campaign(benchmarks))
    r = run_cli("run", "c.toml", "--store", "sqlite:///s.db", cwd=tmp_path, env=cli_env(probe), timeout=300)
    # Exit 0: the run finished with failed measurements beside an ok one (3 only when none succeeded);
    # never 70, the internal error.
    assert r.returncode == 0 and "internal error" not in r.stderr, r.stderr
    run = load_run(open_store(f"sqlite:///{tmp_path}/s.db"), 1)
    errors = {m.benchmark: (m.status, m.error) for m in run.measurements}
    assert errors.pop("good") == ("ok", None)
    assert all(status == "error" for status, _ in errors.values()), errors
    assert errors["deep"][1].startswith("cyclictest-json: the JSON is nested more than 64 levels deep")
    assert errors["infinite"][1] == "cyclictest-json: the JSON has Infinity, which is not a number JSON allows."
    assert errors["nan"][1] == "mapping: figure rate is nan, not a finite number."
    assert errors["buckets"][1].startswith("cyclictest-json: thread 0 has a histogram bin at 100000000000000 us")
    assert errors["backtracking"][1] == "mapping: regex (a+)+$ of figure a matches nothing in the output."
    assert errors["flood"][1] == (f"the command printed {MAX_OUTPUT_BYTES + (1 << 20):,} bytes on stdout, more than "
                                  f"the {MAX_OUTPUT_BYTES:,} a command's output may have; its first 65,536 characters "
                                  "are stored")
    assert errors["one_line"][1].startswith("the command printed 104,857,6"), errors["one_line"]
    with sqlite3.connect(tmp_path / "s.db") as db:
        stored = dict(db.execute("SELECT m.benchmark, length(r.data) FROM records r JOIN measurements m "
                                 "ON m.id = r.measurement_id WHERE r.type = 'output'").fetchall())
        results = [b for (b,) in db.execute("SELECT m.benchmark FROM records r JOIN measurements m "
                                            "ON m.id = r.measurement_id WHERE r.type = 'result'")]
    # The head of what passed the limit; the rest kept verbatim.
    assert stored["flood"] < 100_000 and stored["one_line"] < 100_000 and stored["deep"] > 200_000, stored
    assert results == ["good"]
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"command output end to end: {len(benchmarks)} measurements, {errors}, largest child RSS {rss:.0f} MB")
    assert rss < 500, rss
    r = run_cli("report", "--store", "sqlite:///s.db", "--format", "html", cwd=tmp_path, env=cli_env(probe))
    assert r.returncode == 0, r.stderr
