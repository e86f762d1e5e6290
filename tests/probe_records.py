"""Reading the probe's JSON Lines in tests: strictly, so that a malformed line fails the test."""

from __future__ import annotations

import json


def records(text: str) -> list[dict]:
    """Parse JSON Lines, failing on any line that is not a JSON object with a type."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        rec = json.loads(line)
        assert isinstance(rec, dict) and "type" in rec, f"line {n} is not a record: {line[:80]}"
        out.append(rec)
    return out


def of_type(recs: list[dict], t: str) -> list[dict]:
    return [r for r in recs if r["type"] == t]
