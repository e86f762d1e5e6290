"""Analysis of a campaign run: figures, summaries, comparisons, requirement verdicts, findings.

Everything here reads a `rtvbench.results.CampaignRun` and returns plain data;
nothing touches the store or a target, and nothing formats for humans (that is
the report's job).
"""
