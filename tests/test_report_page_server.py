"""The loopback server the PDF's browser gets its page from (rtvbench/report/page_server.py): the page
goes to a request for its token path only, the owner check sees this user's socket, and it gives up
when the browser has ended or the deadline passes."""

from __future__ import annotations

import os
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from rtvbench.report.page_server import PageServer, _owner

pytestmark = pytest.mark.functional


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_the_page_goes_to_its_token_path_only_and_once():
    server = PageServer()
    base = server.url.rsplit("/", 1)[0]
    got = {}

    def browser():
        got["other"] = _get(base + "/favicon.ico")
        got["page"] = _get(server.url)

    t = threading.Thread(target=browser)
    t.start()
    assert server.serve("<p>rapport é</p>".encode(), time.monotonic() + 60, lambda: True)
    t.join(60)
    server.close()
    assert got["other"][0] == 404 and got["page"] == (200, "<p>rapport é</p>".encode())
    with pytest.raises(OSError):                   # closed: nobody else gets it afterwards
        socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])), timeout=5)


def test_the_kernels_table_names_this_user_as_the_owner_of_a_connection():
    server = PageServer()
    port = int(server.url.split(":")[2].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
        assert _owner(c.getsockname()[1], port) == os.getuid()
        assert _owner(c.getsockname()[1], port + 1 if port < 65535 else port - 1) == -1
    server.close()


def test_it_gives_up_when_the_browser_ended_or_the_deadline_passed():
    server = PageServer()
    start = time.monotonic()
    assert not server.serve(b"x", time.monotonic() + 60, lambda: False)
    assert not server.serve(b"x", time.monotonic() + 0.2, lambda: True)
    assert time.monotonic() - start < 30             # a hang guard, not a timing claim
    server.close()
