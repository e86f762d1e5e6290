"""The `network` benchmark: a one-way stream between two environments (`rtvb-probe network`,
docs/probe/network.md).

The receiver runs in `peer` (`rtvb-probe network --serve --port 0`, started for each measurement
as the `ipc` benchmark's round-trip server is: rtvbench/benchmarks/peer.py), the sender in the
measured environment (`--connect ADDR:PORT`). The sender's result holds the receiver's figures:
the rate is what arrived over the receiver's own span. The peer's own cell streams over its
loopback. `bidir` makes the receiver stream back at the same time (tcp); `search_steps` turns a udp
measurement into a search for the highest pace that loses nothing, `rate_bps` its ceiling.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.benchmarks.peer import PeerEnds, endpoint
from rtvbench.params import Name, StrictModel, number_arg, probe_int, probe_number, probe_size

#: the probe's defaults and limits (probe/network.c)
DEFAULT_SIZE = {"tcp": 131072, "udp": 1400}
UDP_MAX_SIZE = 65507
DEFAULT_DURATION_S = 10.0
#: where probe_args() points the sender before a server runs (the runner uses client_args)
PLACEHOLDER = ("127.0.0.1", 47817)
#: beyond the stream: session setup, the receiver's report, its wait for late udp datagrams
_SETUP_S = 0.6
#: the most trials of a zero-loss search (probe/network.c NET_MAX_STEPS)
MAX_SEARCH_STEPS = 30
#: figures only a session in both directions has, and only a zero-loss search
BIDIR_FIGURES = ("reverse_rate_Mbps", "sum_rate_Mbps")
SEARCH_FIGURES = ("zero_loss_Mbps", "zero_loss_kpps", "search_resolution_Mbps")
#: a search's result has these only per step (step<N>.offered_Mbps ...), not as a single stream's
STREAM_FIGURES = ("rate_bps", "rate_Mbps", "loss_percent", "sender_cpu_percent", "receiver_cpu_percent")

DurationS = probe_number("duration-s", 0.01, 1e6, "a number of seconds")
Size = probe_size("size", 16, 16 << 20)
RateBps = probe_int("rate-bps", 1000, 10**12)
TimeoutS = probe_number("timeout-s", 0.001, 1e6, "a number of seconds")
SearchSteps = probe_int("search-steps", 1, MAX_SEARCH_STEPS)


class NetworkParams(StrictModel):
    peer: Name                                  # the environment the receiver runs in
    transport: Literal["tcp", "udp"] = "tcp"
    duration_s: DurationS = DEFAULT_DURATION_S
    size: Optional[Size] = None                 # bytes per send; None: the probe's default per transport
    rate_bps: Optional[RateBps] = None          # udp: the sender's pace, bits per second of payload
    timeout_s: Optional[TimeoutS] = None
    bidir: bool = False                         # tcp: the receiver streams back at the same time
    search_steps: Optional[SearchSteps] = None  # udp: trials of the zero-loss search below rate_bps

    @model_validator(mode="after")
    def _udp_paced(self):
        if self.transport == "udp":
            if self.rate_bps is None:
                raise ValueError("udp needs rate_bps (bits per second): an unpaced udp sender measures only "
                                 "what is dropped")
            if self.size is not None and self.size > UDP_MAX_SIZE:
                raise ValueError(f"a udp datagram is {UDP_MAX_SIZE} bytes at most (size = {self.size})")
            if self.bidir:
                raise ValueError('bidir is a tcp session; a udp stream goes one way (drop bidir or set '
                                 'transport = "tcp")')
        else:
            if self.rate_bps is not None:
                raise ValueError('rate_bps paces udp only; tcp streams as fast as it can (set transport = "udp")')
            if self.search_steps is not None:
                raise ValueError('search_steps searches the highest udp pace without loss; tcp loses nothing '
                                 '(set transport = "udp" and rate_bps, the ceiling of the search)')
        return self


@BENCHMARKS.register("network")
class NetworkBenchmark(PeerEnds, Benchmark):
    kind = "network"
    Params = NetworkParams
    server_role = "the receiver"

    def figure_problem(self, figure: str) -> str | None:
        p: NetworkParams = self.params
        per_step = figure.startswith("step") and "." in figure
        if p.search_steps is not None and figure in STREAM_FIGURES:
            return ("is a figure of a single stream; a zero-loss search has zero_loss_Mbps, zero_loss_kpps "
                    "and each trial's step<N>.offered_Mbps and step<N>.loss_percent")
        if (figure in SEARCH_FIGURES or per_step) and p.search_steps is None:
            return 'is a figure of the zero-loss search (set transport = "udp", rate_bps and search_steps)'
        if figure in BIDIR_FIGURES and not p.bidir:
            return 'is a figure of a session in both directions (set bidir = true, tcp)'
        if figure == "loss_percent" and p.transport == "tcp":
            return 'is a udp figure: tcp delivers every byte or fails (set transport = "udp" and rate_bps)'
        return None

    def probe_args(self) -> list[str]:
        """The sender's command against a server at the default port on loopback; the runner runs
        client_args(ADDR, PORT) once the receiver in `peer` listens."""
        return self.client_args(*PLACEHOLDER)

    def server_args(self) -> list[str]:
        p: NetworkParams = self.params
        args = ["network", "--serve", "--port", "0"]
        if p.timeout_s is not None:
            args += ["--timeout-s", number_arg(p.timeout_s)]
        return args

    def client_args(self, address: str, port: int) -> list[str]:
        p: NetworkParams = self.params
        args = ["network", "--connect", endpoint(address, port), "--transport", p.transport,
                "--duration-s", number_arg(p.duration_s)]
        # Always written: the stored command reproduces the run whatever a probe's default is.
        args += ["--size", str(p.size if p.size is not None else DEFAULT_SIZE[p.transport])]
        if p.rate_bps is not None:
            args += ["--rate-bps", str(p.rate_bps)]
        if p.timeout_s is not None:
            args += ["--timeout-s", number_arg(p.timeout_s)]
        if p.bidir:
            args += ["--bidir"]
        if p.search_steps is not None:
            args += ["--search-steps", str(p.search_steps)]
        return args

    def expected_seconds(self) -> float:
        p: NetworkParams = self.params
        # A lossy trial ends with the receiver's wait for stragglers.
        return (p.search_steps or 1) * (p.duration_s + _SETUP_S + (0.5 if p.search_steps else 0))
