"""`make test`: every test, in three phases, then one summary.

- unit: needs nothing but Python, measures nothing; in parallel.
- functional: runs the probe, guests or servers but asserts nothing that depends on time (the
  `functional` marker, set by a test's author); two at a time, a module per worker.
- measuring: everything else; one at a time, on a machine nothing else of ours uses.

Every phase runs whatever an earlier one did, so that one failure does not hide the rest. A
measuring test is a statistical test with a false-failure rate, and a suite of many of them would
fail now and then on a busy machine by chance alone: one that fails is run once more, alone, after
the measuring phase, and fails the suite only when it fails again. Each such second run is named in
the summary, so flakiness stays in sight. A unit or functional test is never run twice: nothing it
asserts depends on chance, so its failure is a bug.

Usage: python tests/phases.py [PYTEST_ARGS...]   (extra arguments go to each phase's pytest run,
e.g. the test files to run; a second run gets the failed tests' ids alone)
Exit status: 0 when every phase passed, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Phase:
    name: str
    pytest_args: tuple[str, ...]
    second_run: bool            # a failed test is run once more, alone, at the end


PHASES = (
    Phase("unit", ("-m", "unit", "-n", "auto"), second_run=False),
    # The slowest tests of the two long phases are listed, to keep the suite's time in sight.
    Phase("functional", ("-m", "functional and not unit", "-n", "2", "--dist", "loadfile", "--durations=10"),
          second_run=False),
    Phase("measuring", ("-m", "not unit and not functional", "--durations=15"), second_run=True),
)


@dataclass
class PhaseResult:
    name: str
    outcomes: dict[str, str] = field(default_factory=dict)     # nodeid -> passed, failed, skipped
    exit_code: int = 0
    seconds: float = 0.0
    passed_on_second_run: list[str] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes.values() if o == outcome)

    @property
    def failed(self) -> bool:
        # pytest exits 1 for failed tests, 5 when no test was selected; anything else (a collection
        # error, an internal error, an interruption) fails the phase even with no test failed.
        return self.count("failed") > 0 or self.exit_code not in (0, 1, 5)


def final_outcomes(log: Path) -> dict[str, str]:
    """Each test's outcome from the reports of its setup, call and teardown: failed when any
    failed (an error in a fixture too), skipped when it was skipped, passed otherwise."""
    reports: dict[str, list[str]] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            r = json.loads(line)
            reports.setdefault(r["nodeid"], []).append(r["outcome"])
    return {nodeid: ("failed" if "failed" in seen else "skipped" if "skipped" in seen else "passed")
            for nodeid, seen in reports.items()}


def run_pytest(args: list[str], log: Path) -> int:
    log.unlink(missing_ok=True)
    env = dict(os.environ, RTVBENCH_TEST_OUTCOMES=str(log))
    argv = [sys.executable, "-m", "pytest", "-q", *args]
    print(f"\n== {' '.join(argv[1:])}", flush=True)
    return subprocess.run(argv, cwd=REPO, env=env).returncode


def run_phase(phase: Phase, extra: list[str], log: Path) -> PhaseResult:
    start = time.monotonic()
    code = run_pytest([*phase.pytest_args, *extra], log)
    return PhaseResult(phase.name, final_outcomes(log), code, time.monotonic() - start)


def second_run(result: PhaseResult, log: Path) -> None:
    """Runs the phase's failed tests once more, one pytest run after all the phases, and keeps
    the second outcome of each; the phase passes when every one of them passes now."""
    failed = sorted(n for n, o in result.outcomes.items() if o == "failed")
    if not failed or result.exit_code not in (0, 1):
        return
    start = time.monotonic()
    print(f"\n== {len(failed)} failed {result.name} test(s) run once more, alone", flush=True)
    code = run_pytest(failed, log)
    again = final_outcomes(log)
    for nodeid in failed:
        outcome = again.get(nodeid, "failed")        # not run again (a crash): still failed
        result.outcomes[nodeid] = outcome
        if outcome == "passed":
            result.passed_on_second_run.append(nodeid)
    if code not in (0, 1):
        result.exit_code = code
    result.seconds += time.monotonic() - start


def summary(results: list[PhaseResult]) -> list[str]:
    lines = ["", "== test summary"]
    for r in results:
        verdict = "FAILED" if r.failed else "ok"
        extra = f", pytest exit {r.exit_code}" if r.exit_code not in (0, 1, 5) else ""
        lines.append(f"{r.name:<11} {verdict:<6}  {r.count('passed')} passed, {r.count('failed')} failed, "
                     f"{r.count('skipped')} skipped, {len(r.passed_on_second_run)} passed on a second run"
                     f"{extra}  ({r.seconds:.0f} s)")
        for nodeid in sorted(n for n, o in r.outcomes.items() if o == "failed"):
            lines.append(f"    failed: {nodeid}")
    rerun = [n for r in results for n in r.passed_on_second_run]
    lines.append(f"{len(rerun)} measuring test(s) passed only on a second run"
                 + (": " + ", ".join(rerun) if rerun else ""))
    return lines


def main(extra: list[str]) -> int:
    results = []
    with tempfile.TemporaryDirectory(prefix="rtvbench-phases-") as tmp:
        log = Path(tmp) / "outcomes.jsonl"
        for phase in PHASES:
            results.append(run_phase(phase, extra, log))
        for phase, result in zip(PHASES, results):
            if phase.second_run:
                second_run(result, log)
    print("\n".join(summary(results)), flush=True)
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
