"""A labgrid lab on 127.0.0.1 for the labgrid target's tests: a coordinator and an exporter of
the installed labgrid, and boards with their power switches.

- An ssh board is a private sshd (helpers/sshd.py), published as a NetworkService.
- A serial board is `rtvb-probe agent` on one end of a pty pair; the other end is served on a TCP
  port the way ser2net serves a serial port in raw mode, published as a NetworkSerialPort.

A switch is a `rest` NetworkPowerPort (labgrid's driver PUTs "1"/"0" to a URL and GETs the state)
served by a thread of the test: off stops the board (its sshd, or its agent and everything the
agent runs), as a board losing power would; on starts it again. Every switch is logged, so a
test can tell that the board was powered on or cycled.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
import tty
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

from helpers.sshd import _free_port, command_lines, descendants

BIN = Path(sys.executable).parent          # labgrid-coordinator etc. of the installed package


class PowerSwitch:
    """A board's power: on calls start, off calls stop; `dead` keeps the board from booting."""

    def __init__(self, start: Callable[[], object], stop: Callable[[], object]) -> None:
        self.start, self.stop = start, stop
        self.on = False
        self.dead = False
        self.log: list[str] = []
        self._lock = threading.Lock()
        switch = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer(b"1" if switch.on else b"0")

            def do_PUT(self) -> None:
                value = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                switch.set(value == b"1")
                self._answer(b"")

            def _answer(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/power/{{index}}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def set(self, on: bool) -> None:
        with self._lock:
            self.log.append("on" if on else "off")
            if on and not self.on and not self.dead:
                self.start()
            elif not on and self.on:
                self.stop()
            self.on = on

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def power_port(switch: PowerSwitch) -> str:
    """The exporter's YAML of a resource group's NetworkPowerPort for `switch`."""
    return f'  NetworkPowerPort:\n    model: rest\n    host: "{switch.url}"\n    index: 0\n'


def ssh_board(group: str, port: int, user: str) -> str:
    """The exporter's YAML of a resource group whose NetworkService is an ssh board on 127.0.0.1:port."""
    return f"{group}:\n  NetworkService:\n    address: 127.0.0.1\n    username: {user}\n    port: {port}\n"


class SerialBoard:
    """`rtvb-probe agent` on a pty, its other end served on 127.0.0.1:port like ser2net's raw
    mode: one client at a time, and what the board prints while nobody is connected is lost."""

    def __init__(self, probe: Path, log: Path) -> None:
        self.probe, self.log = probe, log
        self.master, self._slave = os.openpty()
        # Raw from the start: no echo of what the host sends while no agent has the line.
        tty.setraw(self._slave)
        self.tty = os.ttyname(self._slave)
        self.agent: subprocess.Popen | None = None
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self._stop = threading.Event()
        self._server_thread = threading.Thread(target=self._serve, daemon=True)
        self._server_thread.start()

    def boot(self) -> None:
        termios.tcflush(self._slave, termios.TCIFLUSH)     # a booting board's line holds nothing yet
        self.agent = subprocess.Popen([str(self.probe), "agent", "--channel", self.tty],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=open(self.log, "ab"), start_new_session=True)

    def halt(self) -> None:
        """Power gone: the agent and every command it runs die at once. The agent goes first: killed
        after its probe, it could still send the probe's exit status (137) up the line, which a
        board without power never does (seen once in a full test run)."""
        if self.agent is None:
            return
        for pid in [self.agent.pid, *descendants(self.agent.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.agent.wait()
        self.agent = None

    def probe_commands(self) -> list[str]:
        """The command lines of the probes the agent runs."""
        return command_lines(descendants(self.agent.pid)) if self.agent is not None else []

    def _serve(self) -> None:
        client: socket.socket | None = None
        while not self._stop.is_set():
            watched = [self.master, self.server] + ([client] if client else [])
            ready, _, _ = select.select(watched, [], [], 0.2)
            if self.server in ready:
                if client:
                    client.close()      # a new connection takes the line over, as in ser2net
                client, _ = self.server.accept()
            if self.master in ready:
                data = os.read(self.master, 1 << 16)
                if client:
                    try:
                        client.sendall(data)
                    except OSError:
                        client.close()
                        client = None
            if client and client in ready:
                data = client.recv(1 << 16)
                if data:
                    os.write(self.master, data)
                else:
                    client.close()
                    client = None

    def close(self) -> None:
        self.halt()
        self._stop.set()
        self._server_thread.join(5)
        self.server.close()

    def resource(self) -> str:
        """The exporter's YAML of the NetworkSerialPort publishing the line."""
        return (f"  NetworkSerialPort:\n    host: 127.0.0.1\n    port: {self.port}\n"
                "    speed: 115200\n    protocol: raw\n")


class Lab:
    """Coordinator and exporter processes, and labgrid-client to ask them. `resources` is the
    exporter's configuration (groups of resources)."""

    def __init__(self, root: Path, resources: str) -> None:
        self.root = root
        self.address = f"127.0.0.1:{_free_port()}"
        self.procs: list[subprocess.Popen] = []
        self.groups = [line[:-1] for line in resources.splitlines() if line and not line[0].isspace()]
        (root / "exporter.yaml").write_text(resources)

    def start(self) -> "Lab":
        # The coordinator keeps its places in its working directory.
        self._spawn("coordinator", [str(BIN / "labgrid-coordinator"), "-l", self.address])
        self._wait(lambda: self.client("places", check=False).returncode == 0, "the coordinator")
        self._spawn("exporter", [str(BIN / "labgrid-exporter"), "-c", self.address, "-n", "rtvb-exporter",
                                 "--hostname", "127.0.0.1", str(self.root / "exporter.yaml")])
        self._wait(lambda: all(f"/{group}/" in self.client("resources", check=False).stdout
                               for group in self.groups), "the exporter's resources")
        return self

    def _spawn(self, name: str, argv: list[str]) -> None:
        self.procs.append(subprocess.Popen(argv, cwd=self.root, stdin=subprocess.DEVNULL,
                                           stdout=open(self.root / f"{name}.log", "wb"),
                                           stderr=subprocess.STDOUT, start_new_session=True))

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{proc.args[0]} exited: {self.logs()}")
            if ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{what} did not come up: {self.logs()}")

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-2000:] for p in self.root.glob("*.log"))

    def client(self, *args: str, user: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        env = dict(os.environ, LG_USERNAME=user) if user else None
        r = subprocess.run([str(BIN / "labgrid-client"), "-x", self.address, *args], env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            raise RuntimeError(f"labgrid-client {' '.join(args)} failed: {r.stderr}")
        return r

    def add_place(self, name: str, group: str) -> None:
        self.client("-p", name, "create")
        self.client("-p", name, "add-match", f"rtvb-exporter/{group}/*")

    def holder(self, place: str) -> str | None:
        """Who has acquired the place ("host/user"), as the coordinator says, or None."""
        for line in self.client("-p", place, "show").stdout.splitlines():
            if line.strip().startswith("acquired:"):
                value = line.split(":", 1)[1].strip()
                return None if value == "None" else value
        raise AssertionError(f"no `acquired:` line for place {place}")

    def holders(self, places: list[str]) -> list[str | None]:
        """Who has acquired each of `places`, as holder() says, asked in one call."""
        found: dict[str, str | None] = {}
        name = None
        for line in self.client("-v", "places").stdout.splitlines():
            if line.startswith("Place '"):
                name = line.split("'")[1]
            elif name and line.strip().startswith("acquired:"):
                value = line.split(":", 1)[1].strip()
                found[name] = None if value == "None" else value
        return [found[p] for p in places]

    def reservations(self) -> list[dict[str, str]]:
        """The coordinator's reservations, each with the keys `labgrid-client reservations` shows
        (owner, state ...; `filters` "name=P", `allocations` the place it has)."""
        found: list[dict[str, str]] = []
        section = ""
        for line in self.client("reservations").stdout.splitlines():
            if line.startswith("Reservation '"):
                found.append({"token": line.split("'")[1]})
            elif found and ":" in line:
                key, value = (x.strip() for x in line.split(":", 1))
                if not value:
                    section = key           # filters: / allocations:, then their `main:` line
                else:
                    found[-1][section if key == "main" else key] = value
        return found

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
