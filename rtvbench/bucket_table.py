"""The probe's histogram buckets as compact tables: n x 3 int64 arrays of [lo_ns, hi_ns, count].

A stored run's records come back from JSON with every bucket a list of three Python integers, 175
bytes each; a large report reads hundreds of thousands. The store's reader replaces them by tables
as it loads a run, and the analysis parses histograms from either form.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def compact_histograms(record: dict[str, Any]) -> dict[str, Any]:
    """The record with the bucket list of each histogram in it (its own, a nested result's) replaced by
    its table, in place. Lists that are not all integers stay lists, for the parser to name the bad
    entry."""
    hist = record.get("histogram")
    if isinstance(hist, dict) and isinstance(hist.get("buckets"), list):
        table = bucket_table(hist["buckets"])
        if table is not None:
            hist["buckets"] = table
    for value in record.values():
        if isinstance(value, dict):
            compact_histograms(value)
    return record


def bucket_table(entries) -> np.ndarray | None:
    """The buckets as an n x 3 int64 table when every entry is three integers that fit, else None."""
    try:
        table = np.array(entries)
    except ValueError:                                     # ragged: entries of different lengths
        return None
    if table.size == 0:
        return np.zeros((0, 3), dtype=np.int64)
    if table.ndim != 2 or table.shape[1] != 3 or table.dtype.kind != "i":
        return None
    return table.astype(np.int64, copy=False)       # int32 on some platforms
