"""The `network` kind: a stream between two environments (docs/probe/network.md).

Figures, from the sender's result record (which carries the receiver's report):

  `rate_bps`              bits per second of payload that arrived, over the receiver's own span
                          (network usage: bits, not the bytes of the probe's `_bps` fields);
                          higher is better; with `bidir`, the direction to the peer
  `rate_Mbps`             the same in 10^6 bits per second
  `loss_percent`          udp only: datagrams sent but never received, in % of those sent
  `sender_cpu_percent`    the sender's CPU time (user + system) over its streaming span, in % of one CPU
  `receiver_cpu_percent`  the receiver's, over its receive loop
  `reverse_rate_Mbps`     `bidir`: the direction back from the peer, at the same time, as received here
  `sum_rate_Mbps`         `bidir`: the two directions' rates added
  `zero_loss_Mbps`        a zero-loss search: the highest pace a trial ran at without losing a datagram
  `zero_loss_kpps`        the same in thousands of datagrams per second, at the datagram size
  `search_resolution_Mbps`  how far above `zero_loss_Mbps` the limit may lie (the last interval; 0 when
                          the ceiling itself lost nothing)
  `step<N>.offered_Mbps`, `step<N>.offered_kpps`, `step<N>.loss_percent`  the search's trial N (from 1):
                          its pace (in Mbit/s and thousands of datagrams per second) and its loss

A measurement whose stream arrived corrupted (`verified: false`) or that was cut short yields no
figure.
"""

from __future__ import annotations

import re
from typing import Any

from rtvbench.analysis.kind import Kind, register
from rtvbench.analysis.quantities import number
from rtvbench.results import Measurement
from rtvbench.units import human_rate, significant

FIGURES = ("rate_bps", "rate_Mbps", "loss_percent", "sender_cpu_percent", "receiver_cpu_percent",
           "reverse_rate_Mbps", "sum_rate_Mbps", "zero_loss_Mbps", "zero_loss_kpps", "search_resolution_Mbps")
_UNITS = {"rate_bps": "bit/s", "rate_Mbps": "Mbit/s", "loss_percent": "%", "sender_cpu_percent": "%",
          "receiver_cpu_percent": "%", "reverse_rate_Mbps": "Mbit/s", "sum_rate_Mbps": "Mbit/s",
          "zero_loss_Mbps": "Mbit/s", "zero_loss_kpps": "kpps", "search_resolution_Mbps": "Mbit/s",
          "offered_Mbps": "Mbit/s", "offered_kpps": "kpps"}
_LABELS = {"rate_bps": "rate at the receiver", "rate_Mbps": "rate at the receiver",
           "loss_percent": "datagrams lost", "sender_cpu_percent": "sender CPU",
           "receiver_cpu_percent": "receiver CPU", "reverse_rate_Mbps": "rate back from the peer",
           "sum_rate_Mbps": "both directions", "zero_loss_Mbps": "highest rate without loss",
           "zero_loss_kpps": "highest datagram rate without loss",
           "search_resolution_Mbps": "search resolution", "offered_Mbps": "paced rate",
           "offered_kpps": "paced datagram rate"}
#: what the record field of each figure is, and its scale
_FIELDS = {"rate_bps": ("rate_bits_per_s", 1.0), "rate_Mbps": ("rate_bits_per_s", 1e6),
           "loss_percent": ("loss_percent", 1.0), "sender_cpu_percent": ("sender_cpu_percent", 1.0),
           "receiver_cpu_percent": ("receiver_cpu_percent", 1.0),
           "reverse_rate_Mbps": ("reverse_rate_bits_per_s", 1e6), "sum_rate_Mbps": ("sum_rate_bits_per_s", 1e6),
           "zero_loss_Mbps": ("zero_loss_rate_bits_per_s", 1e6), "zero_loss_kpps": ("zero_loss_packets_per_s", 1e3),
           "search_resolution_Mbps": ("search_resolution_bits_per_s", 1e6)}
#: a search trial's figures: `step<N>.<figure>` from the record's steps[N - 1]
_STEP = re.compile(r"^step([1-9]\d*)\.(offered_Mbps|offered_kpps|loss_percent)$")
STEP_FIGURES = ("offered_Mbps", "offered_kpps", "loss_percent")
#: figures that go up as the link gets better
_HIGHER_BETTER = {"rate_bps", "rate_Mbps", "reverse_rate_Mbps", "sum_rate_Mbps", "zero_loss_Mbps",
                  "zero_loss_kpps", "offered_Mbps", "offered_kpps"}


def sender_result(m: Measurement) -> dict[str, Any] | None:
    """The sender's complete, verified result of a measurement, or None."""
    for r in m.results:
        if r.get("role") == "sender" and r.get("complete") is True and r.get("verified") is True:
            return r
    return None


def step_figure(step: int, figure: str) -> str:
    """The name of a figure of the search's trial `step` (from 1): `step3.loss_percent`."""
    return f"step{step}.{figure}"


def split_step(name: str) -> tuple[int | None, str]:
    """(trial, figure) of a search trial's figure name, (None, name) for any other."""
    m = _STEP.match(name)
    return (int(m.group(1)), m.group(2)) if m else (None, name)


class NetworkKind(Kind):
    name = "network"
    table_figures = FIGURES
    comparison_figures = ("rate_bps", "loss_percent", "sender_cpu_percent", "receiver_cpu_percent",
                          "reverse_rate_Mbps", "sum_rate_Mbps", "zero_loss_Mbps")

    def figures(self, m: Measurement) -> dict[str, float]:
        r = sender_result(m)
        out: dict[str, float] = {}
        if r is None:
            return out
        for figure, (field, scale) in _FIELDS.items():
            v = number(r.get(field))
            if v is not None:
                out[figure] = v / scale
        steps, size = r.get("steps"), number(r.get("size_bytes"))
        for i, step in enumerate(steps if isinstance(steps, list) else [], start=1):
            rate = number(step.get("target_rate_bits_per_s")) if isinstance(step, dict) else None
            loss = number(step.get("loss_percent")) if isinstance(step, dict) else None
            if rate is not None:
                out[step_figure(i, "offered_Mbps")] = rate / 1e6
                if size:
                    out[step_figure(i, "offered_kpps")] = rate / (8 * size) / 1e3
            if loss is not None:
                out[step_figure(i, "loss_percent")] = loss
        return out

    def is_figure(self, figure: str) -> bool:
        return figure in FIGURES or split_step(figure)[0] is not None

    def unit(self, figure: str) -> str:
        return _UNITS.get(split_step(figure)[1], "count")

    def format(self, value: float | None, figure: str) -> str:
        if value is None or value != value:
            return "n/a"
        if figure == "rate_bps":
            return human_rate(value, "bit/s")
        return f"{significant(value)} {self.unit(figure)}"

    def label(self, figure: str) -> str:
        step, name = split_step(figure)
        text = _LABELS.get(name, name)
        return f"trial {step}: {'loss' if name == 'loss_percent' else text}" if step else text

    def row_figures(self, present: list[str]) -> list[str]:
        return [f for f in FIGURES if f in present]

    def compared_figures(self, present: list[str]) -> list[str]:
        return [f for f in self.comparison_figures if f in present]

    def stable_figures(self, present: list[str]) -> list[str]:
        return [f for f in ("rate_bps", "sender_cpu_percent", "receiver_cpu_percent", "sum_rate_Mbps",
                            "zero_loss_Mbps") if f in present]

    def lower_is_better(self, figure: str) -> bool:
        return split_step(figure)[1] not in _HIGHER_BETTER

    def considerations(self, data, bench: str, comps: list,
                       analysed: Any = None) -> list[tuple[str, str, str]]:
        """Where a zero-loss search did not bracket the limit: its ceiling lost nothing (the limit lies at
        or above it), or every trial lost datagrams (no rate without loss was found)."""
        out = []
        for env, load in data.cells(bench):
            at_ceiling = lossy = 0
            lowest = None
            for m in data.measurements(env, load, bench):
                f = data.figures(m)
                if "step1.offered_Mbps" not in f:
                    continue
                if f.get("zero_loss_Mbps") == f["step1.offered_Mbps"]:
                    at_ceiling += 1
                elif "zero_loss_Mbps" not in f:
                    lossy += 1
                    tried = [v for name, v in f.items() if split_step(name)[1] == "offered_Mbps"]
                    lowest = min(tried + ([lowest] if lowest is not None else []))
            where = f"`{bench}` in `{env}` under `{load}`"
            if at_ceiling:
                out.append(("warning", "result", (
                    f"{where}: the ceiling (`rate_bps`) lost nothing in {at_ceiling} repetition(s), so the "
                    "highest rate without loss is that ceiling or above it; raise `rate_bps` to find it.")))
            if lossy:
                out.append(("warning", "result", (
                    f"{where}: every trial lost datagrams in {lossy} repetition(s), down to "
                    f"{self.format(lowest, 'zero_loss_Mbps')}: no rate without loss was found; lower `rate_bps` or "
                    "raise `search_steps`.")))
        return out

    def describe(self, benchmark: dict[str, Any], params: dict[str, Any] | None) -> str:
        p = params or {}
        transport = p.get("transport") or benchmark.get("transport") or "tcp"
        duration = p.get("duration_ns")
        size = p.get("size_bytes")
        peer = benchmark.get("peer", "the peer environment")
        steps = p.get("search_steps") or benchmark.get("search_steps")
        if transport == "udp" and steps:
            return (f"The highest rate at which udp datagrams of {size} B from this environment reach a receiver in "
                    f"{peer} without loss, found by bisection in at most {steps} trials"
                    + (f" of {duration / 1e9:g} s each" if duration else "")
                    + f": the first paced to the ceiling, {human_rate(p.get('rate_bits_per_s'), 'bit/s')}, each "
                    "further one to the middle of the interval between the highest rate that lost nothing and the "
                    "lowest that lost some. The result is the highest paced rate without loss, in Mbit/s of "
                    "payload and thousands of datagrams per second; every trial's rate and loss are listed, and "
                    "every datagram is checked by the receiver.")
        bidir = p.get("bidir") is True or benchmark.get("bidir") is True
        how = (f"datagrams of {size} B paced to {human_rate(p.get('rate_bits_per_s'), 'bit/s')}, each numbered"
               if transport == "udp" else f"chunks of {size} B as fast as the connection takes them")
        lead = (f"A tcp session in both directions at once between this environment and {peer}"
                if bidir else f"A one-way {transport} stream from this environment to a receiver in {peer}")
        return (lead + (f" for {duration / 1e9:g} s" if duration else "") + f": {how}, every byte checked by the "
                "receiver. The rate is what arrived over the receiver's own span (bits per second of payload); "
                + ("the rate back from the peer is what arrived here on the second connection over the same time, "
                   "and both directions is their sum; " if bidir else "")
                + ("the loss is the datagrams sent that never arrived; " if transport == "udp" else "")
                + "the CPU figures are each end's user and system time over its span, in % of one CPU"
                + (" (both of its threads)." if bidir else "."))


register(NetworkKind())
