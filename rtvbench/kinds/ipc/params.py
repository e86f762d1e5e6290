"""The `ipc` benchmark: ping-pong round trips by message size (`rtvb-probe ipc`).

Without `peer`, both ends run in the environment being measured (local mode: the probe forks
its own peer). With `peer = "ENV"`, the round trips cross from the measured environment to
another one: for each measurement the runner has this benchmark start `rtvb-probe ipc --serve
--port 0` in the peer environment (start_server), reads the port the server chose from its
`meta` record, and runs `rtvb-probe ipc --connect ADDR:PORT` in the measured environment. ADDR
is what the two targets say (Target.round_trip_address); each end's command is as its target
runs it for round trips with the other (Target.round_trip_command: a local end of round trips with
a guest enters the guests' network namespace). The peer's own cell measures its
loopback: server and client in the same environment, through its IP stack.

With transports = ["shm"] the two ends share a memory region instead of an address
(rtvbench/targets/shm.py): the server is started with the region's options (`--shm-path FILE` on
the host, `--shm-pci auto` in a guest), prints `meta` once the region is ready, and the client
runs `rtvb-probe ipc --connect shm` with its own view of the same region.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from pathlib import Path
from typing import Any, Optional

from pydantic import ValidationInfo, field_validator, model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.catalog import IPC_DEFAULT_TRANSPORTS, IPC_TRANSPORTS
from rtvbench.cpulist import probe_cpu_pair
from rtvbench.errors import ProbeOutputError
from rtvbench.loads.base import LoadError, LoadSite
from rtvbench.params import Name, StrictModel, names_or_all, number_arg, probe_int, probe_number, probe_sizes
from rtvbench.probe import ProbeStream
from rtvbench.spec import Placement
from rtvbench.targets import shm as shm_regions
from rtvbench.targets.base import Background, Target

DEFAULT_SIZES = (16, 64, 256, 1024, 1280, 4096, 65536)
DEFAULT_COUNT, DEFAULT_WARMUP = 10_000, 100
# A local round trip costs ~10-50 us (more with large messages), for the progress bar only.
_ROUND_TRIP_S = 30e-6
#: what can cross between two environments (pipe and unix join processes of one system; vsock
#: has no target that offers it yet: guests get no vhost-vsock device; shm joins environments that
#: share a region)
PEER_TRANSPORTS = ("tcp", "udp", "shm")
#: the smallest region file a local shm server creates (the probe's own default for --serve)
SHM_LOCAL_MIN_BYTES = 4 << 20
#: how long the server may take to print its `meta` record (the port): a static binary starts
#: in milliseconds, a slow link to the peer is the only reason to wait longer
SERVER_START_S = 10.0
#: after the client's end, time the server gets to finish its session (BYE) and exit by itself
SERVER_END_S = 5.0


# Validated name lists (module level: pydantic reads annotations by name).
Transports = names_or_all(IPC_TRANSPORTS, "transport")
Sizes = probe_sizes("sizes", 16, 16 << 20, 32, sweeps=False)
Count = probe_int("count", 1, 10**12)
DurationS = probe_number("duration-s", 0.001, 1e6, "a number of seconds")
Warmup = probe_int("warmup", 0, 10**9)
TimeoutS = probe_number("timeout-s", 0.001, 1e6, "a number of seconds")
Cpus = probe_cpu_pair("cpus")


class IpcParams(StrictModel):
    # Before `transports`: its validator reads it.
    peer: Optional[Name] = None
    transports: Transports = IPC_DEFAULT_TRANSPORTS
    sizes: Optional[Sizes] = None
    count: Optional[Count] = None
    duration_s: Optional[DurationS] = None
    warmup: Optional[Warmup] = None
    timeout_s: Optional[TimeoutS] = None
    cpus: Optional[Cpus] = None
    # The probe's own options for the two ends: rtvbench sets them itself from `peer`.
    serve: Optional[Any] = None
    connect: Optional[Any] = None
    port: Optional[Any] = None
    bind: Optional[Any] = None

    @model_validator(mode="before")
    @classmethod
    def _peer_default_transport(cls, data):
        # Between environments the probe takes one transport at a time; tcp unless told.
        if isinstance(data, dict) and data.get("peer") is not None and "transports" not in data:
            return {**data, "transports": ["tcp"]}
        return data

    @field_validator("serve", "connect", "port", "bind")
    @classmethod
    def _set_by_rtvbench(cls, v):
        raise ValueError('rtvbench starts the server and picks its port and address itself; name the '
                         'environment the server runs in with `peer = "ENV"` instead')

    @field_validator("transports")
    @classmethod
    def _between_environments(cls, v, info: ValidationInfo):
        if info.data.get("peer") is None:
            return v
        bad = [t for t in v if t not in PEER_TRANSPORTS]
        if bad == ["vsock"]:
            # Between this machine and a guest it would need vhost-vsock (/dev/vhost-vsock and a
            # vhost-vsock-pci device per guest), which rtvbench does not set up.
            raise ValueError('transport "vsock" does not cross between environments: rtvbench gives guests no '
                             'vhost-vsock device; with a peer use ["tcp"] or ["udp"] (a qemu guest needs '
                             '`network = true`), or ["shm"] (a region the environments share)')
        if bad:
            raise ValueError(f'transport "{bad[0]}" does not cross between environments; with a peer '
                             'use ["tcp"], ["udp"] or ["shm"]')
        if len(v) != 1:
            raise ValueError("with a peer, name one transport (the server serves one at a time); "
                             "measure tcp, udp and shm as separate benchmarks")
        return v


    @model_validator(mode="after")
    def _one_limit(self):
        if self.count is not None and self.duration_s is not None:
            raise ValueError("set count or duration_s, not both")
        return self


class PeerServer:
    """A running `rtvb-probe ipc --serve` in the peer environment, and the client's command."""

    def __init__(self, bg: "Background", stream: ProbeStream, client_argv: list[str],
                 leftover: Path | None = None) -> None:
        self.bg, self.stream, self.client_argv = bg, stream, client_argv
        self.leftover = leftover        # a local shm region file the server created

    def stop(self) -> None:
        """Let the server end a session it served by itself, then stop it whatever it does."""
        # No result yet: no client came (the load or the client failed), nothing to wait for.
        deadline = time.monotonic() + (SERVER_END_S if self.stream.results else 0)
        while self.bg.poll() is None and self.stream.end is None and time.monotonic() < deadline:
            time.sleep(0.02)
        self.bg.stop()
        if self.leftover is not None:
            self.leftover.unlink(missing_ok=True)   # the server removes it, unless it was killed


@BENCHMARKS.register("ipc")
class IpcBenchmark(Benchmark):
    kind = "ipc"
    Params = IpcParams

    def __init__(self, name: str, params: StrictModel) -> None:
        super().__init__(name, params)
        # (measured environment, peer environment) -> the address the first reaches the second at
        self._addresses: dict[tuple[str, str], str] = {}
        self._shm_files = itertools.count(1)

    @property
    def peer(self) -> str | None:
        """The environment the server runs in, or None (both ends in the measured environment)."""
        return self.params.peer

    def _limits(self) -> list[str]:
        p: IpcParams = self.params
        args = []
        if p.sizes is not None:
            args += ["--sizes", ",".join(str(s) for s in p.sizes)]
        if p.count is not None:
            args += ["--count", str(p.count)]
        if p.duration_s is not None:
            args += ["--duration-s", number_arg(p.duration_s)]
        if p.warmup is not None:
            args += ["--warmup", str(p.warmup)]
        if p.timeout_s is not None:
            args += ["--timeout-s", number_arg(p.timeout_s)]
        return args

    def placement(self) -> Placement:
        p: IpcParams = self.params
        return Placement(tuple(sorted(set(p.cpus))) if p.cpus is not None else None)

    def probe_args(self) -> list[str]:
        """Local mode's command line (with a peer: client_args, once the server runs)."""
        p: IpcParams = self.params
        args = ["ipc", "--transport", ",".join(p.transports), *self._limits()]
        if p.cpus is not None:
            args += ["--cpus", ",".join(str(c) for c in p.cpus)]
        return args

    @property
    def _shm(self) -> bool:
        return self.params.transports[0] == "shm"

    def largest_size(self) -> int:
        return max(self.params.sizes or DEFAULT_SIZES)

    def _shm_local_bytes(self) -> int:
        """A region for the largest size each way (a power of two, as an ivshmem BAR would be)."""
        need = 2 * self.largest_size() + 4096
        return max(SHM_LOCAL_MIN_BYTES, 1 << (need - 1).bit_length())

    def server_args(self, region: list[str] | None = None) -> list[str]:
        p: IpcParams = self.params
        args = ["ipc", "--serve", "--transport", p.transports[0],
                *(region if region is not None else ["--port", "0"])]
        if p.timeout_s is not None:
            args += ["--timeout-s", number_arg(p.timeout_s)]
        if p.cpus is not None and len(p.cpus) == 2:
            args += ["--cpus", str(p.cpus[1])]          # [this end, peer]: the server is the peer
        return args

    def client_args(self, address: str, port: int, region: list[str] | None = None) -> list[str]:
        p: IpcParams = self.params
        host = f"[{address}]" if ":" in address else address
        args = ["ipc", "--connect", "shm" if region is not None else f"{host}:{port}",
                "--transport", p.transports[0], *(region or []), *self._limits()]
        if p.cpus is not None:
            args += ["--cpus", str(p.cpus[0])]
        return args

    def address(self, measured: "Target", peer: "Target") -> str:
        """Where `measured` reaches a server in `peer` (TargetError: the two cannot be joined)."""
        key = (measured.name, peer.name)
        if key not in self._addresses:
            self._addresses[key] = measured.round_trip_address(peer)
        return self._addresses[key]

    def check_reachable(self, environments: dict[str, "Target"]) -> None:
        """Before the first measurement: every measured environment can reach the peer, so that a
        pair of targets that cannot be joined fails the run at once, not after hours of others."""
        peer = environments[self.peer]
        for target in environments.values():
            if self._shm:
                shm_regions.probe_args(target, peer, Path(), 0)
            else:
                self.address(target, peer)

    def start_server(self, sites: dict[str, "LoadSite"], measured: str) -> PeerServer:
        """Start the server in the peer environment for one measurement; return once it listens.
        Raises LoadError when it does not start, TargetError when the two cannot be joined."""
        # Here, not at module level: rtvbench.loads imports the benchmarks package.
        site, client = sites[self.peer], sites[measured]
        region_args, leftover = None, None
        if self._shm:
            leftover = shm_regions.SHM_DIR / f"rtvb-{os.getpid()}-ipc-{self.name}-{next(self._shm_files)}"
            region_args = shm_regions.probe_args(client.target, site.target, leftover,
                                                 self._shm_local_bytes())
            address = ""
            if "--shm-size" not in region_args[1]:
                leftover = None             # a guest's region: rtvbench's own file, not the server's
        else:
            address = self.address(client.target, site.target)
        argv = site.target.round_trip_command(
            client.target, [site.probe, *self.server_args(region_args[1] if region_args else None)])
        what = f'the round-trip server of benchmark "{self.name}" in environment {self.peer}'
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
        if region_args is not None and stream.meta is not None:
            port = 0                        # shm: meta says the region is ready, there is no port
        if (stream.end is not None or bg.failure() or not isinstance(port, int)
                or (port <= 0 and region_args is None)):
            bg.stop()
            why = (bg.failure() or (stream.end or {}).get("error") or bg.output_tail()
                   or (f"no output within {SERVER_START_S:g} s" if bg.poll() is None else "no output"))
            raise LoadError(f"{what} (rtvb-probe {' '.join(argv[1:])}) did not start: {why}")
        client_argv = client.target.round_trip_command(
            site.target, [client.probe, *self.client_args(address, port, region_args[0] if region_args else None)])
        return PeerServer(bg, stream, client_argv, leftover)

    def expected_seconds(self) -> float:
        p: IpcParams = self.params
        points = len(p.transports) * len(p.sizes or DEFAULT_SIZES)
        warmup = (p.warmup if p.warmup is not None else DEFAULT_WARMUP) * _ROUND_TRIP_S
        if p.duration_s is not None:
            return points * (p.duration_s + warmup)
        return points * ((p.count or DEFAULT_COUNT) * _ROUND_TRIP_S + warmup)
