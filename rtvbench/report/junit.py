"""JUnit XML: the requirements' verdicts as test results, for CI systems that show them.

One test case per requirement and cell (environment or "candidate vs baseline", under a load):
PASS passes, FAIL is a failure, INCONCLUSIVE is skipped with its reason, because an undecided
requirement is neither proof of a fault nor of its absence. A requirement that could not be
evaluated at all (an unknown metric, no bound) is one skipped test case. The test suite is the
campaign; its timestamp is the run's start.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from rtvbench.analysis.evaluation import Evaluation


def render_junit(ev: Evaluation) -> str:
    run = ev.data.run
    cases = []
    for v in ev.verdicts:
        title = v.title or str(v.requirement)
        if v.cells:
            cases += [(f"{title} [{c.environment} / {c.load}]", c.status, c.text) for c in v.cells]
        else:
            cases.append((title, v.status, v.reason))
    suite = ET.Element("testsuite", {
        "name": run.campaign_name, "tests": str(len(cases)),
        "failures": str(sum(s == "FAIL" for _, s, _ in cases)), "errors": "0",
        "skipped": str(sum(s == "INCONCLUSIVE" for _, s, _ in cases)),
        "timestamp": run.started_at.strftime("%Y-%m-%dT%H:%M:%S") if run.started_at else "",
    })
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", {"name": "rtvbench.run", "value": str(run.id)})
    for name, status, text in cases:
        case = ET.SubElement(suite, "testcase", {"classname": f"rtvbench.{run.campaign_name}", "name": name,
                                                  "time": "0"})
        if status == "FAIL":
            ET.SubElement(case, "failure", {"message": text, "type": "requirement"}).text = text
        elif status != "PASS":
            ET.SubElement(case, "skipped", {"message": f"{status}: {text}"})
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
