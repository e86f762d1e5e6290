"""Evaluation reports of a campaign run: HTML, Markdown, CSV, JSON."""

from __future__ import annotations

from rtvbench.results import CampaignRun

FORMATS = ("html", "md", "csv", "json")


def render(run: CampaignRun, fmt: str) -> str:
    """The report of `run` in format `fmt` ("html", "md", "csv" or "json") as text."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    from rtvbench.analysis.evaluation import evaluate_run

    ev = evaluate_run(run)
    if fmt == "html":
        from rtvbench.report.html import render_html
        return render_html(ev)
    if fmt == "md":
        from rtvbench.report.markdown import render_markdown
        return render_markdown(ev)
    if fmt == "csv":
        from rtvbench.report.csv_export import render_csv
        return render_csv(ev)
    from rtvbench.report.json_export import render_json
    return render_json(ev)
