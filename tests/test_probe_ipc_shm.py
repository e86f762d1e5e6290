"""`rtvb-probe ipc --transport shm`: two probes exchanging messages through one shared memory file
(a --serve and a --connect shm), the forked local mode, corruption of the region caught and named
(the hidden --x-corrupt-after hook flips a byte in the region after the sender's checksum), sizes
that do not fit the region refused, and the region file removed by the probe that created it.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from probe_records import records
from test_probe_ipc import check_distribution, client_results, run_ipc
from test_probe_os import assert_usage_error

pytestmark = pytest.mark.functional

SIZES = [16, 64, 1024, 4096, 65536]


@pytest.fixture
def region(tmp_path: Path) -> Path:
    # A memory file (tmpfs) when there is one, as on a host mapping ivshmem's backing file.
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp_path
    path = base / f"rtvb-test-{time.monotonic_ns()}"
    yield path
    path.unlink(missing_ok=True)


def start_server(probe: Path, region: Path, *args: str) -> subprocess.Popen:
    server = subprocess.Popen([str(probe), "ipc", "--serve", "--transport", "shm", "--shm-path", str(region), *args],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    meta = records(server.stdout.readline())[0]     # printed once the region is laid out and ready
    assert meta["type"] == "meta" and meta["params"]["shm"] == str(region), meta
    assert meta["params"]["port"] is None and meta["params"]["shm_bytes"] == 4 << 20
    return server


def finish(server: subprocess.Popen) -> list[dict]:
    out, err = server.communicate(timeout=30)
    return records(out)


def test_two_probes_through_one_file_verify_every_size(probe, region):
    server = start_server(probe, region)
    assert region.stat().st_size == 4 << 20
    recs = run_ipc(probe, "--connect", "shm", "--shm-path", str(region), "--sizes", ",".join(map(str, SIZES)),
                   "--count", "300", "--warmup", "20")
    assert recs[0]["params"]["transports"] == ["shm"] and recs[-1]["status"] == "ok", recs[-1]
    res = client_results(recs)
    assert [r["size_bytes"] for r in res] == SIZES
    for r in res:
        assert r["transport"] == "shm" and r["peer"] == str(region)
        assert r["count"] == 300 and r["complete"] is True and r["verified"] is True and "corruption" not in r
        check_distribution(r)
    served = finish(server)
    assert served[-1]["status"] == "ok"
    assert [(r["size_bytes"], r["messages"], r["verified"]) for r in client_results(served)] == \
        [(s, 320, True) for s in SIZES]
    assert not region.exists()          # the server created it, the server removed it


def test_local_mode_forks_its_peer_over_an_anonymous_region(probe):
    recs = run_ipc(probe, "--transport", "shm", "--sizes", "16,65536", "--count", "200")
    assert recs[0]["params"]["shm"] is None and recs[-1]["status"] == "ok"
    assert [(r["size_bytes"], r["count"], r["verified"]) for r in client_results(recs)] == \
        [(16, 200, True), (65536, 200, True)]


@pytest.mark.parametrize("side", ["reply", "request"])
def test_a_byte_flipped_in_the_region_is_caught_and_named(probe, region, side):
    # The server's 1st message is the phase's acknowledgement, then one reply per request: its
    # 40th message is reply 38. The client's 1st is the phase, then requests: its 40th is request 38.
    hook = ("--x-corrupt-after", "40")
    server = start_server(probe, region, *(hook if side == "reply" else ()))
    recs = run_ipc(probe, "--connect", "shm", "--shm-path", str(region), "--sizes", "1024", "--count", "100",
                   "--warmup", "0", *(hook if side == "request" else ()), expect_rc=3)
    res = client_results(recs)[0]
    assert res["verified"] is False
    bad = res["corruption"]
    assert bad["direction"] == side and bad["message"] == 38 and bad["offset"] == 1023
    assert bad["expected"] ^ bad["got"] == 0x01 and bad["messages_affected"] == 1
    assert recs[-1]["status"] == "error" and "38" in recs[-1]["error"]
    finish(server)
    assert not region.exists()


def test_an_altered_control_message_is_caught_by_the_checksum(probe, region):
    # The server's 1st message acknowledges the phase: its last byte is padding, which only the
    # transport's checksum covers.
    server = start_server(probe, region, "--x-corrupt-after", "1")
    recs = run_ipc(probe, "--connect", "shm", "--shm-path", str(region), "--sizes", "64", expect_rc=3)
    assert client_results(recs) == []
    assert recs[-1]["error"] == ("starting the 64-byte phase: a control message whose checksum does not match "
                                 "its bytes arrived (the shm region was altered)")
    finish(server)


def test_a_size_that_does_not_fit_the_region_is_refused(probe, region):
    recs = run_ipc(probe, "--transport", "shm", "--shm-path", str(region), "--shm-size", "64k",
                   "--sizes", "16,65536", expect_rc=3)
    assert client_results(recs) == []
    error = recs[-1]["error"]
    assert error.startswith("65536-byte messages do not fit the shm region") and error.count(". ") == 0
    assert not region.exists()


def test_a_client_without_a_server_gives_up_after_its_timeout(probe, region):
    region.write_bytes(bytes(8192))     # a region nobody serves
    t0 = time.monotonic()
    recs = run_ipc(probe, "--connect", "shm", "--shm-path", str(region), "--timeout-s", "0.3", "--sizes", "16",
                   expect_rc=3)
    # It waited its 0.3 s, and gave up well before the default timeout (10 s) would have: the bound
    # leaves a loaded machine 25 times the wait to start and end the probe.
    assert recs[0]["params"]["timeout_ns"] == 300_000_000 and recs[-1]["elapsed_ns"] >= 300_000_000
    assert time.monotonic() - t0 < 8
    assert "no rtvb-probe ipc --serve took the session" in recs[-1]["error"]
    assert region.exists()              # not the client's to remove


@pytest.mark.parametrize("args", [
    ["--serve", "--transport", "shm"],                                   # which region?
    ["--connect", "shm", "--transport", "tcp", "--shm-path", "/dev/shm/x"],
    ["--transport", "tcp", "--shm-path", "/dev/shm/x"],                  # shm options without shm
    ["--transport", "shm", "--shm-path", "/dev/shm/x", "--shm-pci", "auto"],
    ["--transport", "shm", "--shm-pci", "auto", "--shm-size", "1m"],
    ["--serve", "--transport", "shm", "--shm-path", "/dev/shm/x", "--port", "5000"],
])
def test_usage_errors(probe, args):
    assert_usage_error(probe, "ipc", args)
