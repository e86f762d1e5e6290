"""The `network` kind's decoder on result records written out here: the figures of a session in both
directions and of a zero-loss search (each trial's, with its datagram rate at the record's size), their
units and direction, and the warnings of a search that did not bracket the limit."""

from __future__ import annotations

import pytest

from rtvbench.analysis.kind import get_kind
from rtvbench.results import Measurement

KIND = get_kind("network")


def _measurement(result: dict, mid: int = 1) -> Measurement:
    record = {"type": "result", "role": "sender", "complete": True, "verified": True, **result}
    return Measurement(mid, "native", "idle", "net", "network", 0, "ok", [], [], None, None, None, [record])


SEARCH = {"transport": "udp", "size_bytes": 1000, "search_ceiling_bits_per_s": 40_000_000,
          "steps": [{"target_rate_bits_per_s": 40_000_000, "loss_percent": 50.0},
                    {"target_rate_bits_per_s": 20_000_000, "loss_percent": 0.0},
                    {"target_rate_bits_per_s": 30_000_000, "loss_percent": 12.5}],
          "zero_loss_rate_bits_per_s": 20_000_000, "zero_loss_packets_per_s": 2500.0,
          "search_resolution_bits_per_s": 10_000_000}


def test_a_search_yields_its_result_and_every_trial():
    f = KIND.figures(_measurement(SEARCH))
    assert (f["zero_loss_Mbps"], f["zero_loss_kpps"], f["search_resolution_Mbps"]) == (20.0, 2.5, 10.0)
    assert [f[f"step{n}.offered_Mbps"] for n in (1, 2, 3)] == [40.0, 20.0, 30.0]
    assert [f[f"step{n}.offered_kpps"] for n in (1, 2, 3)] == [5.0, 2.5, 3.75]      # at 1000 B a datagram
    assert [f[f"step{n}.loss_percent"] for n in (1, 2, 3)] == [50.0, 0.0, 12.5]
    assert "rate_bps" not in f and "step4.offered_Mbps" not in f
    assert all(KIND.knows(name) for name in f)
    assert (KIND.unit("zero_loss_kpps"), KIND.unit("step2.offered_kpps"), KIND.unit("step3.loss_percent")) == (
        "kpps", "kpps", "%")
    assert not KIND.lower_is_better("zero_loss_Mbps") and not KIND.lower_is_better("step1.offered_Mbps")
    assert KIND.lower_is_better("step1.loss_percent")
    assert KIND.label("step3.loss_percent") == "trial 3: loss"


def test_both_directions_and_their_sum():
    f = KIND.figures(_measurement({"transport": "tcp", "rate_bits_per_s": 3e9, "bidir": True,
                                   "reverse_rate_bits_per_s": 1e9, "sum_rate_bits_per_s": 4e9}))
    assert (f["rate_Mbps"], f["reverse_rate_Mbps"], f["sum_rate_Mbps"]) == (3000.0, 1000.0, 4000.0)
    assert not KIND.lower_is_better("sum_rate_Mbps") and not KIND.lower_is_better("reverse_rate_Mbps")


class _Data:
    """What the kind's considerations read of a run: one cell of the given measurements."""

    def __init__(self, ms: list[Measurement]):
        self.ms = ms

    def cells(self, bench):
        return [("native", "idle")]

    def measurements(self, env, load, bench):
        return self.ms

    def figures(self, m):
        return KIND.figures(m)


AT_CEILING = {**SEARCH, "steps": [{"target_rate_bits_per_s": 40_000_000, "loss_percent": 0.0}],
              "zero_loss_rate_bits_per_s": 40_000_000, "zero_loss_packets_per_s": 5000.0,
              "search_resolution_bits_per_s": 0}
ALL_LOST = {**SEARCH, "steps": SEARCH["steps"][:1], "zero_loss_rate_bits_per_s": None,
            "zero_loss_packets_per_s": None, "search_resolution_bits_per_s": None}


@pytest.mark.parametrize("result, expected", [
    (SEARCH, []),
    (AT_CEILING, ["`net` in `native` under `idle`: the ceiling (`rate_bps`) lost nothing in 1 repetition(s), so the "
                  "highest rate without loss is that ceiling or above it; raise `rate_bps` to find it."]),
    (ALL_LOST, ["`net` in `native` under `idle`: every trial lost datagrams in 1 repetition(s), down to 40.0 Mbit/s: "
                "no rate without loss was found; lower `rate_bps` or raise `search_steps`."]),
])
def test_a_search_that_did_not_bracket_the_limit_is_said(result, expected):
    found = KIND.considerations(_Data([_measurement(result)]), "net", [])
    assert [text for _, _, text in found] == expected
    assert all(severity == "warning" for severity, _, _ in found)
