"""`report --format pdf`: the HTML report printed by headless Chromium through the template's print
stylesheet. Ground truth: the report model's own widest table, whose every column header and last
column must be in the PDF's text (a clipped column would be missing), and the section headings, each
of which must open a page. Text and page sizes come from poppler's pdftotext and pdfinfo."""

from __future__ import annotations

import copy
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest
from host_helpers import processes_with
from synthetic_runs import DEFAULT_CAMPAIGN, build_run

from rtvbench.analysis.evaluation import evaluate_run
from rtvbench.cli import main
from rtvbench.report import render_evaluation
from rtvbench.report.model import build
from rtvbench.results import CampaignRun, Measurement

pytestmark = pytest.mark.functional

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ENVIRONMENTS = ["native", "guest-kvm", "guest-kvm-rt", "guest-tcg", "board-a", "board-b"]
LOADS = ["idle", "stress"]
# Two os benchmarks: quick to evaluate, and their LMbench-style table has a column per environment
# and load (14 here, each cell "avg (min x, max y)"), wider than A4 at the screen's font size.
BENCHMARKS = {"sys": ["null", "pipe_lat"], "files": ["stat", "open_close"]}
A4_LANDSCAPE = (841.89, 595.28)   # 297 x 210 mm in points; Chromium rounds each to its own units


def wide_run() -> CampaignRun:
    campaign = copy.deepcopy(DEFAULT_CAMPAIGN)
    campaign["environments"] = {e: {"target": "local"} for e in ENVIRONMENTS}
    campaign["loads"] = {"idle": {}, "stress": {"command": "stress-ng --cpu 2"}}
    campaign["benchmarks"] = {b: {"kind": "os", "tests": tests} for b, tests in BENCHMARKS.items()}
    run = build_run(campaign, repetitions=0)         # the run and its fingerprints; measurements below
    for bench, tests in BENCHMARKS.items():
        for i, env in enumerate(ENVIRONMENTS):
            for load in LOADS:
                for rep in range(3):
                    ns = 100 * (i + 1) * (2 if load == "stress" else 1) + rep
                    results = [{"type": "result", "test": t, "ns_per_op": ns * (k + 1) + 0.5, "min_ns": ns * (k + 1),
                                "converged": True} for k, t in enumerate(tests)]
                    run.measurements.append(Measurement(
                        id=len(run.measurements) + 1, environment=env, load=load, benchmark=bench, kind="os",
                        repetition=rep, status="ok", command=["rtvb-probe", "os"], load_commands=[],
                        started_at=run.started_at, finished_at=run.started_at, results=results,
                        meta={"type": "meta", "schema": 1, "subcommand": "os", "params": {}}))
    return run


def _flat(text: str) -> str:
    """Text without whitespace or backticks: a cell wrapped over lines still matches its one-line form."""
    return re.sub(r"[\s`]", "", text)


def _page_texts(pdf: Path) -> list[str]:
    # -raw: the order the text was drawn in, which keeps each table cell's lines together.
    out = subprocess.run(["pdftotext", "-raw", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    return out.split("\f")[:-1]


def _page_sizes(pdf: Path) -> list[tuple[float, float]]:
    info = subprocess.run(["pdfinfo", "-f", "1", "-l", "100000", str(pdf)], capture_output=True, text=True,
                          check=True).stdout
    return [(float(w), float(h)) for w, h in re.findall(r"^Page +\d+ size: +([\d.]+) x ([\d.]+) pts", info, re.M)]


@pytest.mark.browser
def test_pdf_has_every_column_of_the_widest_table_and_a_page_per_benchmark(tmp_path):
    ev = evaluate_run(wide_run())
    model = build(ev, with_plots=False)
    tables = [model.verdicts, *model.key_results, *model.run_tables, model.environments, model.loads,
              model.benchmarks, *([model.fingerprints] if model.fingerprints else [])]
    for s in model.sections:
        tables += s.repetition_tables + s.comparison_tables + s.ranking_tables + s.load_tables
    widest = max(tables, key=lambda t: len(t.header))
    assert len(widest.header) == 2 + len(ENVIRONMENTS) * len(LOADS)

    data = render_evaluation(ev, "pdf")
    assert isinstance(data, bytes) and data.startswith(b"%PDF-")
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(data)

    pages = _page_texts(pdf)
    sizes = _page_sizes(pdf)
    assert len(sizes) == len(pages) > 1
    assert all(w == pytest.approx(A4_LANDSCAPE[0], abs=1) and h == pytest.approx(A4_LANDSCAPE[1], abs=1)
               for w, h in sizes), sizes
    text = _flat("".join(pages))
    # Every header in order after the caption, then the last column's value in the last row: nothing clipped.
    at = text.index(_flat(widest.caption))
    for h in widest.header:
        at = text.index(_flat(h), at) + len(_flat(h))
    assert _flat(widest.rows[-1].cells[-1]) in text[at:text.index(_flat(widest.note), at)]

    first_lines = [next((ln for ln in p.splitlines() if ln.strip()), "") for p in pages]
    for n, (bench, s) in enumerate(zip(BENCHMARKS, model.sections), start=3):
        assert s.name == bench
        assert f"{n}. Benchmark {bench} (os)" in first_lines, first_lines
    assert "2. Environments" in first_lines


def _old_store(tmp_path: Path) -> str:
    """The old-store fixture (8 measurements in one environment): a real store, quick to report."""
    db = tmp_path / "s.db"
    with sqlite3.connect(db) as conn:
        conn.executescript((FIXTURES / "store-0003.sql").read_text(encoding="utf-8"))
    return f"sqlite:///{db}"


def _report(*args: str) -> int:
    with pytest.raises(SystemExit) as exc:
        main(["report", "--format", "pdf", *args])
    return exc.value.code


@pytest.mark.browser
def test_cli_writes_the_pdf_as_bytes_to_a_file_and_to_stdout(tmp_path, capsysbinary, monkeypatch):
    store = _old_store(tmp_path)
    monkeypatch.chdir(tmp_path)                       # the default file goes under the working directory
    assert _report("--store", store) == 0
    [pdf] = (tmp_path / "rtvbench-results").iterdir()
    assert pdf.name == "old-store-1.pdf"
    assert "Benchmark chase (mem-lat)" in "".join(_page_texts(pdf))

    capsysbinary.readouterr()
    assert _report("--store", store, "-o", "-") == 0
    out = capsysbinary.readouterr().out
    assert out.startswith(b"%PDF-") and out.rstrip().endswith(b"%%EOF")
    (tmp_path / "stdout.pdf").write_bytes(out)
    assert _page_texts(tmp_path / "stdout.pdf") == _page_texts(pdf)     # the same report, byte-clean


FAILING_CHROMIUM = """#!/bin/sh
for a in "$@"; do case "$a" in --print-to-pdf=*) printf '%%PDF-1.4 half' > "${a#--print-to-pdf=}";; esac; done
echo "[1:1:ERROR:dbus/bus.cc:405] Failed to connect to the bus" >&2
echo "Trace/breakpoint trap: cannot open the display" >&2
exit 133
"""
# It keeps its own command line (no exec), so that the test finds it in /proc whether or not it got as
# far as writing its pid before it was ended.
HANGING_CHROMIUM = f"""#!/bin/sh
echo $$ > "${{0%/*}}/pid"
while :; do {shutil.which("sleep")} 1; done
"""
BROKEN = {
    "missing": (None, "--format pdf prints the report with chromium, which is not on the PATH"),
    "failing": (FAILING_CHROMIUM, "chromium could not print the report to PDF (exit status 133: "
                                  "Trace/breakpoint trap: cannot open the display)"),
    "hanging": (HANGING_CHROMIUM, "chromium could not print the report to PDF (no PDF after 1 s)"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_without_a_working_chromium_one_sentence_exit_3_and_no_file(tmp_path, capsys, monkeypatch, case):
    from rtvbench.report import pdf as pdf_module

    script, sentence = BROKEN[case]
    store = _old_store(tmp_path)
    bin_dir, out_dir, tmp_dir = tmp_path / "bin", tmp_path / "out", tmp_path / "tmp"
    for d in (bin_dir, out_dir, tmp_dir):
        d.mkdir()
    if script:
        (bin_dir / "chromium").write_text(script)
        (bin_dir / "chromium").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_dir))
    # A second for the one that hangs; the others end by themselves, however long that takes here.
    monkeypatch.setattr(pdf_module, "TIMEOUT_S", 1 if case == "hanging" else 120)

    assert _report("--store", store, "-o", str(out_dir / "r.pdf")) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err == f"rtvbench: {sentence}; install chromium (make setup does) or choose --format html.", err
    assert list(out_dir.iterdir()) == [] and list(tmp_dir.iterdir()) == []
    if case == "hanging":                              # the browser was ended, not left behind
        assert processes_with(str(bin_dir / "chromium")) == []
        if (bin_dir / "pid").exists():                 # it got that far before its second was up
            with pytest.raises(ProcessLookupError):
                os.kill(int((bin_dir / "pid").read_text()), 0)
