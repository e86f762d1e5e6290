"""Evaluation reports of a campaign run: HTML, Markdown, CSV, JSON, JUnit XML, PDF."""

from __future__ import annotations

FORMATS = ("html", "md", "csv", "json", "junit", "pdf")
#: the file name extension of each format, where it is not the format's name
EXTENSIONS = {"junit": "xml"}


def render(run, fmt: str) -> str | bytes:
    """The report of `run` (a results.CampaignRun; not imported here, for `rtvbench --help`) in format `fmt` (one of FORMATS): text, bytes for the binary formats (pdf)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    # Imported here: the analysis stack (numpy, scipy) is not needed for `rtvbench --help`.
    from rtvbench.analysis.evaluation import evaluate_run

    return render_evaluation(evaluate_run(run), fmt)


def render_evaluation(ev, fmt: str, plots: bool = True) -> str | bytes:
    """The report of an evaluated run (an analysis.evaluation.Evaluation; see `render`); without
    plots (`plots` false) in the formats that have them (HTML, PDF)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "html":
        from rtvbench.report.html import render_html
        return render_html(ev, plots)
    if fmt == "md":
        from rtvbench.report.markdown import render_markdown
        return render_markdown(ev)
    if fmt == "csv":
        from rtvbench.report.csv_export import render_csv
        return render_csv(ev)
    if fmt == "junit":
        from rtvbench.report.junit import render_junit
        return render_junit(ev)
    if fmt == "pdf":
        from rtvbench.report.pdf import render_pdf
        return render_pdf(ev, plots)
    from rtvbench.report.json_export import render_json
    return render_json(ev)


def headline(ev):
    """The key results tables (one per benchmark kind), for the console after a run."""
    from rtvbench.report.model import key_results
    return key_results(ev)
