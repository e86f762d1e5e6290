"""JUnit XML: the requirements' verdicts and the comparisons against another run as test results, for
CI systems that show them.

One test suite of requirements, one test case per requirement and cell (environment or "candidate vs
baseline", under a load): PASS passes, FAIL is a failure, INCONCLUSIVE is skipped with its reason,
because an undecided requirement is neither proof of a fault nor of its absence. A requirement that
could not be evaluated at all (an unknown metric, no bound) is one skipped test case. Its timestamp is
the run's start.

One test suite of comparisons when the run is compared with another (`report --baseline`, `compare
--junit`), one test case per figure and cell, its message the medians of both runs, their difference,
the overhead with its interval and p. Against a `--max-percent` bound a figure passes, fails or is
skipped by its status; without one a figure the repetitions show worse (significant) is a regression
and fails, an equivalent or better one passes, and one they cannot tell is skipped. Skipped stays
skipped under `--strict`: the report says what each verdict is, and the exit code is the gate.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import NamedTuple

from rtvbench.analysis.across_runs import AcrossRuns, CellPair, RunComparison
from rtvbench.analysis.compare import EQUIVALENT, SIGNIFICANT, p_text
from rtvbench.analysis.evaluation import Evaluation
from rtvbench.analysis.requirements import FAIL, INCONCLUSIVE, PASS
from rtvbench.units import format_percent


class Case(NamedTuple):
    name: str
    status: str             # PASS | FAIL | INCONCLUSIVE
    text: str
    failure_type: str       # what a failure is: "requirement" or "regression"


def render_junit(ev: Evaluation) -> str:
    run = ev.data.run
    suites = [_suite(run.campaign_name, f"rtvbench.{run.campaign_name}", _requirement_cases(ev),
                     run.started_at, {"rtvbench.run": str(run.id)})]
    if ev.across is not None:
        suites.append(_comparison_suite(ev.across))
    return _document(suites)


def render_junit_across(x: AcrossRuns) -> str:
    """The comparisons of one run against another alone (`compare --junit`)."""
    return _document([_comparison_suite(x)])


def _requirement_cases(ev: Evaluation) -> list[Case]:
    cases = []
    for v in ev.verdicts:
        title = v.title or str(v.requirement)
        if v.cells:
            cases += [Case(f"{title} [{c.environment} / {c.load}]", c.status, c.text, "requirement")
                      for c in v.cells]
        else:
            cases.append(Case(title, v.status, v.reason, "requirement"))
    return cases


def comparison_name(c: RunComparison) -> str:
    """"wakeup.p99_us [native / idle]": a figure of a cell pair, as a test case and the CLI name it."""
    return (f"{CellPair.label(c.cell.benchmark)}.{c.figure} "
            f"[{CellPair.label(c.cell.environment)} / {CellPair.label(c.cell.load)}]")


def _comparison_status(c: RunComparison) -> str:
    if c.status is not None:
        return c.status
    t = c.test
    if t.verdict == SIGNIFICANT:
        return FAIL if t.worse else PASS
    return PASS if t.verdict == EQUIVALENT else INCONCLUSIVE


def _figures(x: AcrossRuns, c: RunComparison) -> str:
    kind, t = x.kind(c.cell.benchmark[1]), c.test
    a, b = x.baseline.run.id, x.candidate.run.id
    diff = t.difference
    ci = t.ci_percent
    parts = [f"run {a} median {kind.format(t.baseline_median, c.figure)}, "
             f"run {b} median {kind.format(t.candidate_median, c.figure)}",
             "difference " + ("–" if diff is None else ("+" if diff > 0 else "") + kind.format(diff, c.figure)),
             f"overhead {format_percent(t.overhead_percent)}"
             + (f" (95 % CI {format_percent(ci[0])} .. {format_percent(ci[1])})" if ci else ""),
             f"p {p_text(t)}", f"{t.n_baseline} vs {t.n_candidate} repetitions", t.verdict]
    return ", ".join(parts)


def _comparison_suite(x: AcrossRuns) -> ET.Element:
    a, b = x.baseline.run, x.candidate.run
    cases = []
    for c in x.comparisons:
        status = _comparison_status(c)
        why = c.reason or ("the repetitions show it worse" if status == FAIL else "")
        cases.append(Case(comparison_name(c), status,
                          _figures(x, c) + (f"; {status}: {why}" if why else ""), "regression"))
    properties = {"rtvbench.baseline_run": str(a.id), "rtvbench.candidate_run": str(b.id)}
    if x.max_percent is not None:
        properties["rtvbench.max_percent"] = f"{x.max_percent:g}"
    return _suite(f"run {b.id} ({b.campaign_name}) against run {a.id} ({a.campaign_name})",
                  f"rtvbench.{b.campaign_name}.against_run_{a.id}", cases, b.started_at, properties)


def _suite(name: str, classname: str, cases: list[Case], started, properties: dict[str, str]) -> ET.Element:
    suite = ET.Element("testsuite", {
        "name": name, "tests": str(len(cases)),
        "failures": str(sum(c.status == FAIL for c in cases)), "errors": "0",
        "skipped": str(sum(c.status not in (PASS, FAIL) for c in cases)),
        "timestamp": started.strftime("%Y-%m-%dT%H:%M:%S") if started else "",
    })
    props = ET.SubElement(suite, "properties")
    for key, value in properties.items():
        ET.SubElement(props, "property", {"name": key, "value": value})
    for c in cases:
        case = ET.SubElement(suite, "testcase", {"classname": classname, "name": c.name, "time": "0"})
        if c.status == FAIL:
            ET.SubElement(case, "failure", {"message": c.text, "type": c.failure_type}).text = c.text
        elif c.status != PASS:
            ET.SubElement(case, "skipped", {"message": f"{c.status}: {c.text}"})
    return suite


def _document(suites: list[ET.Element]) -> str:
    root = ET.Element("testsuites", {
        "tests": str(sum(int(s.get("tests")) for s in suites)),
        "failures": str(sum(int(s.get("failures")) for s in suites)), "errors": "0",
        "skipped": str(sum(int(s.get("skipped")) for s in suites)),
    })
    root.extend(suites)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
