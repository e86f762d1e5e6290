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
from typing import Any, Optional

from pydantic import ValidationInfo, field_validator, model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.benchmarks.peer import Meeting, PeerEnds, endpoint
from rtvbench.catalog import IPC_DEFAULT_TRANSPORTS, IPC_TRANSPORTS
from rtvbench.cpulist import probe_cpu_pair
from rtvbench.params import Name, StrictModel, names_or_all, number_arg, probe_int, probe_number, probe_sizes
from rtvbench.spec import Placement
from rtvbench.targets import shm as shm_regions
from rtvbench.targets.base import Target
from rtvbench.targets.capabilities import ProbeSubset

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


@BENCHMARKS.register("ipc")
class IpcBenchmark(PeerEnds, Benchmark):
    kind = "ipc"
    Params = IpcParams
    server_role = "the round-trip server"
    key_options = {"peer": "--connect", "transports": "--transport", "sizes": "--sizes", "count": "--count",
                   "duration_s": "--duration-s", "warmup": "--warmup", "timeout_s": "--timeout-s", "cpus": "--cpus"}
    #: the bare-metal image is the client of a peer's server over shm (its ivshmem region)
    freestanding_options = ("--connect", "--transport", "--shm-pci", "--sizes", "--count", "--duration-s",
                            "--warmup", "--timeout-s")

    def __init__(self, name: str, params: StrictModel) -> None:
        super().__init__(name, params)
        self._shm_files = itertools.count(1)

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

    def server_args(self) -> list[str]:
        p: IpcParams = self.params
        # Over shm the ends meet in a region (meeting() adds its options), not at a port.
        args = ["ipc", "--serve", "--transport", p.transports[0], *([] if self._shm else ["--port", "0"])]
        if p.timeout_s is not None:
            args += ["--timeout-s", number_arg(p.timeout_s)]
        if p.cpus is not None and len(p.cpus) == 2:
            args += ["--cpus", str(p.cpus[1])]          # [this end, peer]: the server is the peer
        return args

    def client_args(self, address: str, port: int, region: list[str] | None = None) -> list[str]:
        p: IpcParams = self.params
        args = ["ipc", "--connect", "shm" if region is not None else endpoint(address, port),
                "--transport", p.transports[0], *(region or []), *self._limits()]
        if p.cpus is not None:
            args += ["--cpus", str(p.cpus[0])]
        return args

    def meeting(self, client: "Target", server: "Target") -> Meeting:
        if not self._shm:
            return super().meeting(client, server)
        # A region both ends map: on this machine a file the server creates for this measurement,
        # in a guest its ivshmem device (rtvbench's own file, not the server's to remove).
        leftover = shm_regions.local_file(f"ipc-{self.name}-{next(self._shm_files)}")
        client_region, server_region = shm_regions.probe_args(client, server, leftover, self._shm_local_bytes())
        return Meeting("", server_region, client_region, leftover if "--shm-size" in server_region else None)

    def client_args_for(self, meet: Meeting, port: int) -> list[str]:
        return self.client_args(meet.address, port, meet.client_args)

    def campaign_problems(self, environments: dict, loads: dict) -> list[tuple[tuple, str]]:
        """An environment that is the probe alone (a bare-metal image) does ipc only as the client of a
        server elsewhere, over a shm region: it runs nothing in the background and has no other transport."""
        p: IpcParams = self.params
        alone = {env: t for env, t in environments.items() if isinstance(t, ProbeSubset)}
        if p.peer in alone:
            return [(("benchmarks", self.name, "peer"),
                     f'environment "{p.peer}" is {alone[p.peer].describe_self()}, which cannot serve round trips '
                     "(it runs one command at a time and nothing in the background); make it a measured "
                     "environment and name another one as the peer")]
        if alone and (p.peer is None or list(p.transports) != ["shm"]):
            env, target = next(iter(alone.items()))
            return [(("benchmarks", self.name, "transports" if p.peer else "kind"),
                     f'environment "{env}" is {target.describe_self()}, whose ipc is the client of a peer over '
                     'its shm region only; set peer = "ENV" and transports = ["shm"]')]
        return []

    def check_pair(self, client: "Target", server: "Target") -> None:
        if self._shm:
            shm_regions.check(client, server)
        else:
            super().check_pair(client, server)

    def expected_seconds(self) -> float:
        p: IpcParams = self.params
        points = len(p.transports) * len(p.sizes or DEFAULT_SIZES)
        warmup = (p.warmup if p.warmup is not None else DEFAULT_WARMUP) * _ROUND_TRIP_S
        if p.duration_s is not None:
            return points * (p.duration_s + warmup)
        return points * ((p.count or DEFAULT_COUNT) * _ROUND_TRIP_S + warmup)
