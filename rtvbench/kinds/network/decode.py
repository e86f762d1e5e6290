"""The `network` kind: a one-way stream between two environments (docs/probe/network.md).

Figures, from the sender's result record (which carries the receiver's report):

  `rate_bps`              bits per second of payload that arrived, over the receiver's own span
                          (network usage: bits, not the bytes of the probe's `_bps` fields);
                          higher is better
  `rate_Mbps`             the same in 10^6 bits per second
  `loss_percent`          udp only: datagrams sent but never received, in % of those sent
  `sender_cpu_percent`    the sender's CPU time (user + system) over its streaming span, in % of one CPU
  `receiver_cpu_percent`  the receiver's, over its receive loop

A measurement whose stream arrived corrupted (`verified: false`) or that was cut short yields no
figure.
"""

from __future__ import annotations

from typing import Any

from rtvbench.analysis.kind import Kind, register
from rtvbench.analysis.quantities import number
from rtvbench.results import Measurement
from rtvbench.units import human_rate, significant

FIGURES = ("rate_bps", "rate_Mbps", "loss_percent", "sender_cpu_percent", "receiver_cpu_percent")
_UNITS = {"rate_bps": "bit/s", "rate_Mbps": "Mbit/s", "loss_percent": "%", "sender_cpu_percent": "%",
          "receiver_cpu_percent": "%"}
_LABELS = {"rate_bps": "rate at the receiver", "rate_Mbps": "rate at the receiver",
           "loss_percent": "datagrams lost", "sender_cpu_percent": "sender CPU",
           "receiver_cpu_percent": "receiver CPU"}
#: what the record field of each figure is, and its scale
_FIELDS = {"rate_bps": ("rate_bits_per_s", 1.0), "rate_Mbps": ("rate_bits_per_s", 1e6),
           "loss_percent": ("loss_percent", 1.0), "sender_cpu_percent": ("sender_cpu_percent", 1.0),
           "receiver_cpu_percent": ("receiver_cpu_percent", 1.0)}


def sender_result(m: Measurement) -> dict[str, Any] | None:
    """The sender's complete, verified result of a measurement, or None."""
    for r in m.results:
        if r.get("role") == "sender" and r.get("complete") is True and r.get("verified") is True:
            return r
    return None


class NetworkKind(Kind):
    name = "network"
    table_figures = FIGURES
    comparison_figures = ("rate_bps", "loss_percent", "sender_cpu_percent", "receiver_cpu_percent")

    def figures(self, m: Measurement) -> dict[str, float]:
        r = sender_result(m)
        out: dict[str, float] = {}
        for figure, (field, scale) in _FIELDS.items():
            v = number(r.get(field)) if r else None
            if v is not None:
                out[figure] = v / scale
        return out

    def is_figure(self, figure: str) -> bool:
        return figure in FIGURES

    def unit(self, figure: str) -> str:
        return _UNITS.get(figure, "count")

    def format(self, value: float | None, figure: str) -> str:
        if value is None or value != value:
            return "n/a"
        if figure == "rate_bps":
            return human_rate(value, "bit/s")
        return f"{significant(value)} {self.unit(figure)}"

    def label(self, figure: str) -> str:
        return _LABELS.get(figure, figure)

    def row_figures(self, present: list[str]) -> list[str]:
        return [f for f in FIGURES if f in present]

    def compared_figures(self, present: list[str]) -> list[str]:
        return [f for f in self.comparison_figures if f in present]

    def stable_figures(self, present: list[str]) -> list[str]:
        return [f for f in ("rate_bps", "sender_cpu_percent", "receiver_cpu_percent") if f in present]

    def lower_is_better(self, figure: str) -> bool:
        return figure not in ("rate_bps", "rate_Mbps")

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or {}
        transport = p.get("transport") or benchmark.get("transport") or "tcp"
        duration = p.get("duration_ns")
        size = p.get("size_bytes")
        peer = benchmark.get("peer", "the peer environment")
        how = (f"datagrams of {size} B paced to {human_rate(p.get('rate_bits_per_s'), 'bit/s')}, each numbered"
               if transport == "udp" else f"chunks of {size} B as fast as the connection takes them")
        return (f"A one-way {transport} stream from this environment to a receiver in {peer}"
                + (f" for {duration / 1e9:g} s" if duration else "") + f": {how}, every byte checked by the "
                "receiver. The rate is what arrived over the receiver's own span (bits per second of payload); "
                + ("the loss is the datagrams sent that never arrived; " if transport == "udp" else "")
                + "the CPU figures are each end's user and system time over its span, in % of one CPU.")


register(NetworkKind())
