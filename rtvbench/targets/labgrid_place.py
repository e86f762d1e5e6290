"""The `labgrid` target: a board of a labgrid lab, reached as its place says (docs/targets/labgrid.md).

rtvbench acts as a labgrid client (the `labgrid` package, an optional extra): it acquires the
place at the coordinator, switches the board on through the place's power resource, and reaches
it either over ssh at the address and user of the place's NetworkService, with the ssh target's
own machinery (connection sharing, the remote wrapper, probe deployment), or over the place's
serial port, where the probe's agent serves the protocol qemu guests serve (serial_line.py). A
board that stops answering is power-cycled and reached again; the place is released when the
run ends, however it ends.

labgrid is imported only when a labgrid environment is used, so that campaigns without one
never need it installed.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import io
import logging
import os
import time
import weakref
from typing import Any, Callable, Literal, Optional

from pydantic import field_validator, model_validator

from rtvbench.errors import TargetError
from rtvbench.params import WaitS
from rtvbench.targets.base import TARGETS, Background, Completed, Deadline, Target
from rtvbench.targets import capabilities
from rtvbench.targets.capabilities import Capability, PowerCycling, ProcessListing
from rtvbench.targets.serial_line import SerialBoardTarget, SerialLine, program_problem
from rtvbench.targets.ssh import SshAccess, SshParams, SshTarget

DEFAULT_COORDINATOR = "127.0.0.1:20408"     # labgrid's own default when LG_COORDINATOR is unset
RETRY_S = 1.0                               # between attempts to reach a board that is booting

# What a run should hear on the way (a power cycle, a place left taken); the CLI prints it on stderr.
_log = logging.getLogger(__name__)

# The drivers labgrid's own `labgrid-client power` uses for the power resources a place can hold.
_POWER_DRIVERS = {
    "NetworkPowerPort": "NetworkPowerDriver",
    "NetworkUSBPowerPort": "USBPowerDriver",
    "NetworkSiSPMPowerPort": "SiSPMPowerDriver",
    "PDUDaemonPort": "PDUDaemonDriver",
    "TasmotaPowerPort": "TasmotaPowerDriver",
    "NetworkYKUSHPowerPort": "YKUSHPowerDriver",
}


def _name(v: str) -> str:
    if not v or v != v.strip() or any(c.isspace() for c in v):
        raise ValueError("must be a name as labgrid spells it, without spaces")
    return v


class LabgridParams(SshAccess):
    """The place and its power; ssh_config, options and workdir as for the ssh target."""

    place: str
    coordinator: Optional[str] = None           # default: $LG_COORDINATOR, else labgrid's default
    connection: Literal["ssh", "serial"] = "ssh"
    ssh_resource: Optional[str] = None          # which NetworkService, when the place has several
    serial_resource: Optional[str] = None       # which serial port, when the place has several
    hang_timeout_s: WaitS = 10.0       # serial: no heartbeat for this long = a lost board
    power_resource: Optional[str] = None        # which power resource, when the place has several
    power_on: bool = True
    power_cycle: bool = True
    power_off_at_end: bool = False
    power_off_s: WaitS = 2.0           # off time of a power cycle
    boot_timeout_s: WaitS = 120.0

    @field_validator("place", "ssh_resource", "serial_resource", "power_resource")
    @classmethod
    def _names(cls, v: str) -> str:
        return _name(v)

    @field_validator("coordinator")
    @classmethod
    def _coordinator(cls, v: str) -> str:
        host, _, port = v.rpartition(":") if ":" in v else (v, "", "")
        if not host or any(c.isspace() for c in v) or (port and not (port.isdigit() and 1 <= int(port) <= 65535)):
            raise ValueError('must be HOST or HOST:PORT of the labgrid coordinator, e.g. "lab:20408"')
        return v

    @model_validator(mode="after")
    def _keys_of_the_connection(self):
        ssh_only = [k for k in ("ssh_resource", "ssh_config", "options", "workdir") if k in self.model_fields_set]
        serial_only = [k for k in ("serial_resource", "hang_timeout_s") if k in self.model_fields_set]
        wrong = ssh_only if self.connection == "serial" else serial_only
        if wrong:
            raise ValueError(f'{", ".join(wrong)} {"does" if len(wrong) == 1 else "do"} not apply to '
                             f'connection = "{self.connection}": remove {"it" if len(wrong) == 1 else "them"}')
        return self


_held: "weakref.WeakSet[LabgridTarget]" = weakref.WeakSet()

# One session per coordinator for all the places of a run: gRPC gives a process's channels to one
# address a single connection, and the coordinator refuses a second client stream on it.
_sessions: dict[str, tuple[Any, set[str]]] = {}     # coordinator: (session, environments using it)


def _for_place(session, place: str):
    """The session, its labgrid client calls (acquire, release) now about `place`."""
    session.args = argparse.Namespace(place=place, allow_unmatched=False, kick=False)
    return session


@atexit.register
def _release_all() -> None:
    # A path out of rtvbench that skips the runner's teardown must not leave a place taken.
    for target in list(_held):
        target.close()


def _quietly(call: Callable[[], Any]) -> Any:
    """labgrid's client prints what it did on stdout ("acquired place ..."), where rtvbench's own
    results go: kept out of it."""
    with contextlib.redirect_stdout(io.StringIO()):
        return call()


@contextlib.contextmanager
def _labgrid_log():
    """labgrid's client logs why it failed on the root logger, which prints it as it is when the
    application has no handler there: the lines are kept for rtvbench's own one-sentence error."""
    lines: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: lines.append(record.getMessage())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lines
    finally:
        root.removeHandler(handler)


@TARGETS.register("labgrid")
class LabgridTarget(Target, ProcessListing, PowerCycling):
    kind = "labgrid"
    Params = LabgridParams

    def __init__(self, name: str, params: LabgridParams) -> None:
        super().__init__(name, params)
        self.coordinator = params.coordinator or os.environ.get("LG_COORDINATOR") or DEFAULT_COORDINATOR
        self._session = None            # labgrid ClientSession with the coordinator
        self._acquired = False
        self._lg_target = None          # labgrid Target holding the place's resources
        self._power = None              # labgrid power driver, when the place has a power resource
        self._board: SshTarget | SerialBoardTarget | None = None
        self._facts: dict[str, Any] = {}       # how the board is reached, for describe()

    def machine(self) -> str:
        return f"place {self.params.place}"

    def _where(self) -> str:
        return f"labgrid place {self.params.place} (environment {self.name}, coordinator {self.coordinator})"

    # -- the place ------------------------------------------------------------

    def _acquire(self) -> None:
        self.open_session()
        self.take_place()

    def open_session(self):
        """The session with the coordinator (started the first time), the place known to exist there."""
        if self._session is not None:
            return self._session
        try:
            from labgrid.remote.client import Error as LabgridError, start_session
        except ImportError:
            raise TargetError(f"environment {self.name} is a labgrid place but the labgrid client "
                              "library is not installed: install it with `pip install 'rtvbench[labgrid]'`.") from None
        place = self.params.place
        if self.coordinator not in _sessions:
            with _labgrid_log() as logged:
                try:
                    _sessions[self.coordinator] = (start_session(self.coordinator, extra={"args": None}), set())
                except (LabgridError, OSError) as e:
                    why = logged[-1] if logged else str(e).removeprefix("Error: ")
                    raise TargetError(f"cannot reach the labgrid coordinator at {self.coordinator} for "
                                      f"environment {self.name} ({why}); start it, or set `coordinator` (or "
                                      "LG_COORDINATOR) to its HOST:PORT.") from None
        session, users = _sessions[self.coordinator]
        users.add(self.name)
        self._session = session
        _held.add(self)
        if place not in session.places:
            known = ", ".join(sorted(session.places)) or "none"
            raise TargetError(f"labgrid place {place} does not exist at the coordinator {self.coordinator} "
                              f"(places there: {known}); create it with `labgrid-client -p {place} create` "
                              "and add its resources with `add-match`, or fix `place` in environment "
                              f"{self.name}.")
        return session

    def me(self) -> str:
        """Who this run is to the coordinator: "host/user", as labgrid writes who acquired a place."""
        return f"{self._session.gethostname()}/{self._session.getuser()}"

    def refuse_mine(self) -> None:
        """A place already acquired as this run would acquire it is nobody's to wait for."""
        holder = self._session.places[self.params.place].acquired
        if holder and holder == self.me():
            place = self.params.place
            raise TargetError(f"labgrid place {place} is already acquired by you ({holder}), by another "
                              "rtvbench run or by hand: release it with "
                              f"`labgrid-client -x {self.coordinator} -p {place} release` once nothing "
                              "uses it, then run again.")

    def take_place(self) -> None:
        """Acquire the place of the open session; TargetError, with who holds it, when it is taken."""
        from labgrid.remote.client import Error as LabgridError
        session, place = self._session, self.params.place
        # What the coordinator says now, not what it last streamed (a holder that just left).
        session.loop.run_until_complete(session.sync_with_coordinator())
        self.refuse_mine()
        holder = session.places[place].acquired
        if holder:
            raise TargetError(f"labgrid place {place} is acquired by {holder}: wait until they release it "
                              f"(`labgrid-client -p {place} who` shows who holds it), or measure another "
                              f"place in environment {self.name}.")
        try:
            _quietly(lambda: session.loop.run_until_complete(_for_place(session, place).acquire()))
        except LabgridError as e:
            raise TargetError(f"cannot acquire {self._where()}: {str(e).removeprefix('Error: ')}; check "
                              f"it with `labgrid-client -p {place} show`.") from None
        self._acquired = True
        self._lg_target = self._place_target()

    def holds_place(self) -> bool:
        return self._acquired

    def _place_target(self):
        """A labgrid Target with the place's resources, as labgrid's own client builds one."""
        import labgrid
        from labgrid.resource.remote import RemotePlace, RemotePlaceManager
        manager = RemotePlaceManager.get()
        manager.session, manager.loop = self._session, self._session.loop
        target = labgrid.Target(self.params.place)
        RemotePlace(target, name=self.params.place)
        return target

    def _resource(self, classes: tuple[str, ...], name: str | None, what: str, key: str,
                  missing: str | None = None):
        """The place's resource of one of `classes` (the one named `name`); None when it has none,
        unless `missing` says what to do then."""
        found = [r for r in self._lg_target.resources if type(r).__name__ in classes]
        if name is not None:
            picked = [r for r in found if r.name == name]
            if not picked:
                have = ", ".join(r.name for r in found) or "none"
                raise TargetError(f"{self._where()} has no {what} named {name} (it has: {have}); fix "
                                  f"`{key}`.")
            return picked[0]
        if len(found) > 1:
            raise TargetError(f"{self._where()} has {len(found)} {what}s ({', '.join(r.name for r in found)}); "
                              f"name the one to use with `{key}`.")
        if not found and missing:
            raise TargetError(f"{self._where()} has no {what}: {missing}")
        return found[0] if found else None

    def _connect_board(self) -> None:
        if self.params.connection == "serial":
            self._connect_serial()
        else:
            self._connect_ssh()

    def _connect_ssh(self) -> None:
        service = self._resource(("NetworkService",), self.params.ssh_resource, "NetworkService resource",
                                 "ssh_resource", missing="export one (address, username, port) from the "
                                 "board's exporter to reach it over ssh and add it to the place with "
                                 "`add-match`, or set connection = \"serial\".")
        options = list(self.params.options)
        extra = getattr(service, "extra", None) or {}
        proxy = os.environ.get("LG_PROXY") or (extra.get("proxy") if extra.get("proxy_required") else None)
        if proxy:
            # The board is only reachable from its exporter's host, as labgrid's own ssh goes.
            options.append(f"ProxyJump={proxy}")
        host = f"{service.username}@{service.address}" if service.username else service.address
        self._facts = {"host": host, "port": service.port}
        keys = {"host": host, "port": service.port, "ssh_config": self.params.ssh_config,
                "options": options, "workdir": self.params.workdir}
        self._board = SshTarget(self.name, SshParams(**{k: v for k, v in keys.items() if v is not None}))

    def _connect_serial(self) -> None:
        port = self._resource(("NetworkSerialPort",), self.params.serial_resource, "serial port",
                              "serial_resource", missing="export the board's line (USBSerialPort or "
                              "RawSerialPort, published through ser2net) and add it to the place with "
                              "`add-match`, or set connection = \"ssh\".")
        from labgrid.driver import SerialDriver
        if self.params.serial_resource is not None:
            self._lg_target.set_binding_map({"port": port.name})
        driver = SerialDriver(self._lg_target, name=None)
        self._facts = {"serial": f"{port.host}:{port.port}", "protocol": port.protocol, "speed": port.speed}

        def open_port():
            self._lg_target.activate(driver)
            return driver.serial

        def close_port():
            self._lg_target.deactivate(driver)

        line = SerialLine(f"environment {self.name} (labgrid place {self.params.place})", open_port, close_port,
                          self.params.hang_timeout_s)
        self._board = SerialBoardTarget(self.name, line)

    def _power_driver(self):
        p = self.params
        if not (p.power_on or p.power_cycle or p.power_off_at_end):
            return None                 # the switch is left alone: no driver, nothing to fail
        port = self._resource(tuple(_POWER_DRIVERS), self.params.power_resource, "power resource",
                              "power_resource")
        if port is None:
            return None
        import labgrid.driver
        if self.params.power_resource is not None:
            self._lg_target.set_binding_map({"port": port.name})
        try:
            driver = getattr(labgrid.driver, _POWER_DRIVERS[type(port).__name__])(self._lg_target, name=None)
            if hasattr(driver, "delay"):
                driver.delay = self.params.power_off_s
            self._lg_target.activate(driver)
        except Exception as e:  # noqa: BLE001 - whatever the driver of that switch raises
            raise TargetError(f"labgrid cannot use the power resource {port.name} of {self._where()} ({e}); "
                              f"check it with `labgrid-client -p {self.params.place} power get`, or set "
                              "power_on = false and power_cycle = false to measure without it.") from None
        return driver

    def _switch(self, action: str) -> None:
        try:
            getattr(self._power, action)()
        except Exception as e:  # noqa: BLE001 - any backend's failure (HTTP, USB, PDU) is the same to the user
            raise TargetError(f"powering {self._where()} {action} failed: {e}; check its power resource "
                              f"with `labgrid-client -p {self.params.place} power get`.") from None

    # -- reaching the board ------------------------------------------------------

    def _reach(self, deadline: float | None) -> str:
        """Deploy the probe, retrying until `deadline` (a board still booting refuses connections)."""
        while True:
            try:
                return self._board.deploy_probe()
            except TargetError as e:
                if deadline is None or time.monotonic() >= deadline:
                    after = f" within boot_timeout_s ({self.params.boot_timeout_s:g} s) of switching it on" \
                        if deadline is not None else ""
                    raise TargetError(f"the board of {self._where()} did not answer{after}: {e}") from None
            time.sleep(RETRY_S)

    def deploy_probe(self) -> str:
        if self._board is None:
            if not self._acquired:
                self._acquire()
            self._connect_board()
            self._power = self._power_driver()
            deadline = None
            if self._power is not None and self.params.power_on:
                self._switch("on")
                deadline = time.monotonic() + self.params.boot_timeout_s
            return self._reach(deadline)
        # Again after the board went away (TargetLost): reach it as it is, else power-cycle it.
        try:
            return self._board.deploy_probe()
        except TargetError as e:
            if self._power is None or not self.params.power_cycle:
                raise
            _log.warning(f"environment {self.name} does not answer ({str(e).rstrip('.')}); "
                         f"power-cycling labgrid place {self.params.place}.")
        self._board.close()             # its master connection went with the board
        self._switch("cycle")
        return self._reach(time.monotonic() + self.params.boot_timeout_s)

    # -- boot times (the `boot` kind) ----------------------------------------------------

    def capability_problem(self, capability: type[Capability]) -> str | None:
        # What validate can know before the place is acquired; a place without a power resource
        # says so when its boot is measured.
        if capability is PowerCycling and not self._power_cycles():
            return 'a labgrid target with power_cycle = false or connection = "serial"'
        return None

    def _power_cycles(self) -> bool:
        return self.params.power_cycle and self.params.connection == "ssh"

    def power_cycle(self, hard: bool = False) -> dict[str, Any]:
        """The board switched off, power_off_s later on again, and timed as the ssh target times a
        reboot (SshTarget.come_back), from the moment rtvbench asks the switch for off: `down_ns`
        when the switch has answered, `login_ns`, `total_ns`, and the board's uptime split. The power
        goes either way: `hard` changes nothing."""
        if not self._power_cycles():
            why = 'connection = "serial"' if self.params.connection == "serial" else "power_cycle = false"
            raise TargetError(f"{self._where()} is not power-cycled by rtvbench "
                              f"({why}); its boot time is measured over ssh with power_cycle = true.")
        probe_path = self.deploy_probe()        # acquires the place, and switches it on, the first time
        if self._power is None:
            raise TargetError(f"{self._where()} has no power resource, so rtvbench cannot power-cycle it; "
                              "add the board's switch to the place.")
        board: SshTarget = self._board
        before = board.boot_id()
        sent = time.monotonic_ns()
        self._switch("off")
        down = time.monotonic_ns()
        board.forget_connection()
        time.sleep(self.params.power_off_s)
        self._switch("on")
        return board.come_back(
            sent, down, before, probe_path, time.monotonic() + self.params.boot_timeout_s,
            f"boot_timeout_s ({self.params.boot_timeout_s:g} s) of switching it on",
            f"it answered again with the same boot_id ({before}) after it was switched off and on, so the "
            f"power resource of {self._where()} does not switch this board; check which outlet it switches")

    # -- the Target interface: commands go to the board (over ssh or its serial line) ---

    def run(self, argv: list[str], on_line: Callable[[str], None],
            deadline: Deadline | None = None) -> Completed:
        return self._board.run(argv, on_line, deadline)

    def start_background(self, argv: list[str], on_line: Callable[[str], None] | None = None, *,
                         alone: bool = False) -> Background:
        return self._board.start_background(argv, on_line, alone=alone)

    def read_file(self, path: str) -> str:
        return self._board.read_file(path)

    def process_ticks(self) -> dict[str, list] | None:
        return capabilities.process_ticks(self._board)

    def remove_dir(self, path: str) -> None:
        self._board.remove_dir(path)

    def round_trip_address(self, peer: Target) -> str:
        if peer is self:
            return "127.0.0.1"
        return self._board.round_trip_address(peer)

    def check_program(self, program: str) -> str | None:
        return program_problem(program) if self.params.connection == "serial" else None

    def describe(self) -> dict[str, Any]:
        return {**self._board.describe(), **self._facts, "target": "labgrid", "place": self.params.place,
                "coordinator": self.coordinator, "connection": self.params.connection,
                "power": self._power is not None}

    def close(self) -> None:
        if self._board is not None:
            self._board.close()
        session, self._session = self._session, None
        if session is None:
            return
        try:
            if self._power is not None and self.params.power_off_at_end:
                try:
                    self._switch("off")
                except TargetError as e:
                    _log.warning(str(e))
            if self._acquired:
                self._release(session)
        finally:
            self._acquired = False
            self._power = self._lg_target = None
            _held.discard(self)
            users = _sessions.get(self.coordinator, (None, set()))[1]
            users.discard(self.name)
            if not users:
                _sessions.pop(self.coordinator, None)
                with contextlib.suppress(Exception):
                    session.loop.run_until_complete(session.stop())
                    session.loop.run_until_complete(session.close())

    def _release(self, session) -> None:
        from labgrid.remote.client import Error as LabgridError
        try:
            _quietly(lambda: session.loop.run_until_complete(_for_place(session, self.params.place).release()))
        except (LabgridError, OSError, RuntimeError) as e:
            # Said, not raised: the run's own outcome matters more, but a place left taken blocks
            # everyone else in the lab.
            _log.warning(f"releasing labgrid place {self.params.place} failed ({e}); release it with "
                         f"`labgrid-client -x {self.coordinator} -p {self.params.place} release`.")
