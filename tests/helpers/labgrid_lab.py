"""A labgrid lab on 127.0.0.1 for the labgrid target's tests: a coordinator and an exporter of
the installed labgrid, one board that is a private sshd (helpers/sshd.py), and its power switch.

The switch is a `rest` NetworkPowerPort (labgrid's driver PUTs "1"/"0" to a URL and GETs the
state) served by a thread of the test: switching the board off stops its sshd, as a board
losing power would drop its connections; switching it on starts the sshd again. Every switch is
logged, so a test can tell that the board was powered on or cycled.
"""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from helpers.sshd import Sshd, _free_port

BIN = Path(sys.executable).parent          # labgrid-coordinator etc. of the installed package


class PowerSwitch:
    """The board's power: on starts its sshd, off stops it; `dead` keeps it from booting."""

    def __init__(self, board: Sshd) -> None:
        self.board = board
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
                self.board.launch()
            elif not on and self.on:
                self.board.stop()
            self.on = on

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Lab:
    """Coordinator and exporter processes, and labgrid-client to ask them."""

    def __init__(self, root: Path, board: Sshd, power: PowerSwitch) -> None:
        self.root = root
        self.address = f"127.0.0.1:{_free_port()}"
        self.procs: list[subprocess.Popen] = []
        (root / "exporter.yaml").write_text(
            "board:\n"
            "  NetworkService:\n"
            "    address: 127.0.0.1\n"
            f"    username: {getpass.getuser()}\n"
            f"    port: {board.port}\n"
            "  NetworkPowerPort:\n"
            "    model: rest\n"
            f"    host: \"{power.url}\"\n"
            "    index: 0\n")

    def start(self) -> "Lab":
        # The coordinator keeps its places in its working directory.
        self._spawn("coordinator", [str(BIN / "labgrid-coordinator"), "-l", self.address])
        self._wait(lambda: self.client("places", check=False).returncode == 0, "the coordinator")
        self._spawn("exporter", [str(BIN / "labgrid-exporter"), "-c", self.address, "-n", "rtvb-exporter",
                                 "--hostname", "127.0.0.1", str(self.root / "exporter.yaml")])
        self._wait(lambda: "NetworkPowerPort" in self.client("resources", check=False).stdout,
                   "the exporter's resources")
        return self

    def _spawn(self, name: str, argv: list[str]) -> None:
        self.procs.append(subprocess.Popen(argv, cwd=self.root, stdin=subprocess.DEVNULL,
                                           stdout=open(self.root / f"{name}.log", "wb"),
                                           stderr=subprocess.STDOUT, start_new_session=True))

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + 30
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
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        if check and r.returncode != 0:
            raise RuntimeError(f"labgrid-client {' '.join(args)} failed: {r.stderr}")
        return r

    def add_place(self, name: str) -> None:
        self.client("-p", name, "create")
        self.client("-p", name, "add-match", "rtvb-exporter/board/*")

    def holder(self, place: str) -> str | None:
        """Who has acquired the place ("host/user"), as the coordinator says, or None."""
        for line in self.client("-p", place, "show").stdout.splitlines():
            if line.strip().startswith("acquired:"):
                value = line.split(":", 1)[1].strip()
                return None if value == "None" else value
        raise AssertionError(f"no `acquired:` line for place {place}")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
