"""Why a cell has no value of a figure, in words, so that a table's empty cell and a comparison
without data on a side say why rather than show a dash or "0 vs 0".

The reasons, first found first: the cell was never measured; none of its repetitions completed (with
the first failure's error); every repetition's value was no measurement (Kind.not_values: a
difference whose subtracted cost was as large as the measurement); the probe said why in a warning naming the figure or its test (an `os`
test skipped where the environment lacks what it needs: "fork_sh skipped: /bin/sh does not exist
here."); else its completed repetitions simply have no such figure.
"""

from __future__ import annotations

from rtvbench.analysis.dataset import COMPLETE, RunData


def no_value_reason(data: RunData, env: str, load: str, bench: str, figure: str) -> str:
    ms = data.measurements(env, load, bench)
    if not ms:
        return "not measured"
    done = [m for m in ms if m.status in COMPLETE]
    if not done:
        failed = next((m for m in ms if m.error), None)
        return "no repetition completed" + (f" ({failed.error})" if failed else "")
    dropped = left_out(data, env, load, bench, figure)
    if dropped and dropped[0] == len(done):
        return f"not a value in any of the {len(done)} repetitions: {dropped[1]}"
    names = (figure, figure.split(".")[0])
    for m in done:
        for w in m.warnings:
            message = w.get("message") if isinstance(w, dict) else None
            if isinstance(message, str) and message.startswith(tuple(f"{n} " for n in names)):
                return message.rstrip(".")
    return f"no completed repetition has {figure}"


def left_out(data: RunData, env: str, load: str, bench: str, figure: str) -> tuple[int, str] | None:
    """How many of a cell's completed repetitions printed the figure but it was no measurement
    (Kind.not_values), and the first one's reason; None when none."""
    kind = data.kind(bench)
    if kind is None:
        return None
    reasons = [why for m in data.measurements(env, load, bench, COMPLETE)
               if (why := kind.not_values(m).get(figure))]
    return (len(reasons), reasons[0]) if reasons else None
