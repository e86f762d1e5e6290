"""Benchmarks with two ends in two environments (`peer = "ENV"`): the `ipc` round trips and the
`network` stream.

For each measurement the runner has such a benchmark start a probe server in the peer environment
(start_server), reads the port the server chose from its `meta` record (`params.port`), and runs
the client in the measured environment, pointed at ADDR:PORT. ADDR is what the two targets say
(Target.round_trip_address); each end's command is as its target runs it for traffic with the
other (Target.round_trip_command: a local end of traffic with a guest enters the guests' network
namespace). A kind supplies server_args() and client_args(address, port), and `peer`. Ends that
meet otherwise than at an address (an `ipc` over a shared-memory region) say so in meeting().
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from rtvbench import run_files
from rtvbench.errors import ProbeOutputError
from rtvbench.loads.base import LoadError, LoadSite
from rtvbench.probe.stream import ProbeStream
from rtvbench.targets.base import Background, Target

#: how long the server may take to print its `meta` record (the port): a static binary starts
#: in milliseconds, a slow link to the peer is the only reason to wait longer
SERVER_START_S = 10.0
#: after the client's end, time the server gets to finish its session and exit by itself
SERVER_END_S = 5.0


def endpoint(address: str, port: int) -> str:
    """ADDR:PORT as the probe's --connect takes it (an IPv6 address in brackets)."""
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


@dataclass
class Meeting:
    """How the two ends of one measurement find each other."""
    address: str = ""                   # where the client reaches the server (its port added once it listens)
    server_args: list[str] = field(default_factory=list)       # the server's options for it
    client_args: list[str] | None = None    # the client's own way there, instead of ADDR:PORT
    leftover: Path | None = None        # a file the server creates, removed should the server be killed


class PeerServer:
    """A running probe server in the peer environment, and the client's command."""

    def __init__(self, bg: "Background", stream: ProbeStream, client_argv: list[str],
                 leftover: Path | None = None) -> None:
        self.bg, self.stream, self.client_argv = bg, stream, client_argv
        self.leftover = leftover

    def own_time(self) -> dict | None:
        """The server's `end` record (its CPU and wall time) with its pid, once it ended by itself;
        None before, or when it said neither. The measurement conditions count this time as rtvbench's
        own where the server ran in the measured environment."""
        end, meta = self.stream.end, self.stream.meta or {}
        if end is None:
            return None
        return {"status": end.get("status"), "elapsed_ns": end.get("elapsed_ns"),
                "cpu_time_ns": end.get("cpu_time_ns"), "pid": meta.get("pid")}

    def stop(self) -> None:
        """Let the server end a session it served by itself, then stop it whatever it does."""
        # No result yet: no client came (the load or the client failed), nothing to wait for.
        deadline = time.monotonic() + (SERVER_END_S if self.stream.results else 0)
        while self.bg.poll() is None and self.stream.end is None and time.monotonic() < deadline:
            time.sleep(0.02)
        self.bg.stop()
        if self.leftover is not None:
            run_files.remove_own(self.leftover)     # the server removes it, unless it was killed


class PeerEnds(ABC):
    """The two-environment machinery of a benchmark with a `peer` (a mixin of Benchmark)."""

    name: str
    #: what the server is, for error messages ("the round-trip server")
    server_role = "the server"

    @property
    def peer(self) -> str | None:
        """The environment the server runs in, or None (both ends in the measured environment)."""
        return self.params.peer

    @abstractmethod
    def server_args(self) -> list[str]:
        """The server's probe command line after the binary."""

    @abstractmethod
    def client_args(self, address: str, port: int) -> list[str]:
        """The client's probe command line after the binary, pointed at ADDR:PORT."""

    def meeting(self, client: "Target", server: "Target") -> Meeting:
        """How the ends meet for one measurement: by default at the address the client reaches the
        server at. TargetError when the two cannot be joined."""
        return Meeting(self.address(client, server))

    def client_args_for(self, meet: Meeting, port: int) -> list[str]:
        return self.client_args(meet.address, port)

    def address(self, measured: "Target", peer: "Target") -> str:
        """Where `measured` reaches a server in `peer` (TargetError: the two cannot be joined)."""
        addresses = self.__dict__.setdefault("_addresses", {})
        key = (measured.name, peer.name)
        if key not in addresses:
            addresses[key] = measured.round_trip_address(peer)
        return addresses[key]

    def check_reachable(self, environments: dict[str, "Target"]) -> None:
        """Before the first measurement: every measured environment can reach the peer, so that a
        pair of targets that cannot be joined fails the run at once, not after hours of others."""
        peer = environments[self.peer]
        for target in environments.values():
            self.check_pair(target, peer)

    def check_pair(self, client: "Target", server: "Target") -> None:
        """TargetError when `client` cannot reach a server in `server` (by default: no address)."""
        self.address(client, server)

    def start_server(self, sites: dict[str, "LoadSite"], measured: str) -> PeerServer:
        """Start the server in the peer environment for one measurement; return once it listens.
        Raises LoadError when it does not start, TargetError when the two cannot be joined."""
        site, client = sites[self.peer], sites[measured]
        meet = self.meeting(client.target, site.target)
        argv = site.target.round_trip_command(client.target, [site.probe, *self.server_args(), *meet.server_args])
        what = f'{self.server_role} of benchmark "{self.name}" in environment {self.peer}'
        stream = ProbeStream(f"output of {what}")
        started = threading.Event()

        def on_line(line: str) -> None:
            try:
                record = stream.feed(line)
            except ProbeOutputError:
                started.set()
                raise                           # kept as the background's failure()
            if record["type"] in ("meta", "end"):
                started.set()

        bg = site.target.start_background(argv, on_line)
        try:
            deadline = time.monotonic() + SERVER_START_S
            while not started.wait(0.02):
                if bg.poll() is not None or time.monotonic() > deadline:
                    break
        except BaseException:
            bg.stop()
            raise
        port = ((stream.meta or {}).get("params") or {}).get("port")
        if meet.client_args is not None and stream.meta is not None:
            port = 0                            # no port to meet at: `meta` says the server is ready
        if (stream.end is not None or bg.failure() or not isinstance(port, int)
                or (port <= 0 and meet.client_args is None)):
            bg.stop()
            why = (bg.failure() or (stream.end or {}).get("error") or bg.output_tail()
                   or (f"no output within {SERVER_START_S:g} s" if bg.poll() is None else "no output"))
            raise LoadError(f"{what} (rtvb-probe {' '.join(argv[1:])}) did not start: {why}")
        client_argv = client.target.round_trip_command(site.target, [client.probe, *self.client_args_for(meet, port)])
        return PeerServer(bg, stream, client_argv, meet.leftover)
