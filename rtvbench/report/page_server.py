"""One page served once over loopback HTTP, to a browser of the same user.

The PDF's browser starts before the page exists: it connects and waits for the answer while the
report draws its plots, and its start (half a second of launching processes) overlaps that work
instead of following it. A file URL cannot wait; a loopback request can.

Only the user running rtvbench gets the page: the kernel's socket table (/proc/net/tcp) says which
user owns the connecting socket, and a connection of another user is closed unanswered (the page is
as private as the report file). The URL's path is a random token as well.
"""

from __future__ import annotations

import os
import secrets
import socket
import time

#: a request line and headers larger than this are not a browser's
MAX_REQUEST = 64 * 1024


class PageServer:
    """A listening loopback socket; `url` to give the browser, then `serve` once the page is ready."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self._path = f"/{secrets.token_urlsafe(16)}.html"
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}{self._path}"

    def serve(self, page: bytes, deadline: float, alive) -> bool:
        """Answer requests until the page went to a request for it: True, or False when the deadline
        (time.monotonic) passed or `alive()` turned false (the browser ended) first."""
        while time.monotonic() < deadline and alive():
            self._sock.settimeout(min(0.05, max(deadline - time.monotonic(), 0.001)))
            try:
                conn, peer = self._sock.accept()
            except (socket.timeout, InterruptedError):
                continue
            with conn:
                if _owner(peer[1], self._sock.getsockname()[1]) not in (os.getuid(), None):
                    continue
                conn.settimeout(max(deadline - time.monotonic(), 0.001))
                try:
                    request = _read_request(conn)
                    wanted = request.split(b" ")[1:2] == [self._path.encode()]
                    body = page if wanted else b"not found\n"
                    head = (f"HTTP/1.0 {'200 OK' if wanted else '404 Not Found'}\r\n"
                            f"Content-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
                            "Cache-Control: no-store\r\nConnection: close\r\n\r\n").encode()
                    conn.sendall(head + body)
                except OSError:
                    continue
                if wanted:
                    return True
        return False

    def close(self) -> None:
        self._sock.close()


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data and len(data) < MAX_REQUEST:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def _owner(client_port: int, server_port: int) -> int | None:
    """The user owning the loopback socket at client_port connected to server_port, from the kernel's
    table (its addresses are hexadecimal, 0100007F:PORT for 127.0.0.1); None without the table (no
    /proc: the token alone keeps the page), -1 when it lacks the socket."""
    want_local, want_remote = f"0100007F:{client_port:04X}", f"0100007F:{server_port:04X}"
    try:
        with open("/proc/net/tcp", encoding="ascii") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 7 and fields[1] == want_local and fields[2] == want_remote:
                    return int(fields[7])
    except OSError:
        return None
    return -1
