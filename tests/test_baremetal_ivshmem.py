"""The bare-metal images' `ipc` against the Linux probe on this machine, over QEMU's ivshmem-plain device
(docs/baremetal.md, "Ping-pong with Linux over ivshmem"): each image boots with a /dev/shm file as its
ivshmem device's memory, finds the device by enumerating PCI itself, and the Linux probe maps the same file.
In both roles and at every size the ipc kind offers (and the largest message the region carries), every
message is checked and counted on both sides, and a byte flipped in the region by either side's test hook
(--x-corrupt-after) is found by the other. Under TCG the round-trip times are emulation: only counts,
integrity and sizes are checked."""

from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest

from baremetal_console import REPO, Console, build_images

# Every test boots an image: the qemu marker keeps them out of the unit phase, whose many workers would
# boot a dozen QEMUs at once.
pytestmark = [pytest.mark.functional, pytest.mark.qemu]

PROBE = REPO / "build" / "probe" / "rtvb-probe"
REGION_BYTES = 1 << 20
# shm_capacity of the region: half of what follows the 512-byte header, in whole 64-byte lines
SLOT_BYTES = (REGION_BYTES - 512) // 2 // 64 * 64
COUNT, WARMUP = 20, 3
QEMU = {
    "aarch64": ["qemu-system-aarch64", "-machine", "virt,gic-version=2", "-cpu", "cortex-a53"],
    "riscv64": ["qemu-system-riscv64", "-machine", "virt", "-bios", "default"],
}


def every_size() -> list[int]:
    from rtvbench.kinds.ipc.params import DEFAULT_SIZES
    return [*DEFAULT_SIZES, SLOT_BYTES]


@pytest.fixture(params=sorted(QEMU))
def image(request):
    """(console, region file) of one architecture's image booted with the region as its ivshmem device.
    A fresh image and region for every test (a boot takes well under a second): a test that fails with
    the image's console still busy, or with a session's state left in the region, fails alone instead of
    every later test of the module with it."""
    arch = request.param
    build_images(QEMU[arch][0], f"{arch}-linux-gnu-gcc")
    subprocess.run(["make", "-s", "-C", str(REPO), "probe"], check=True)
    region = f"/dev/shm/rtvb-test-ivshmem-{arch}-{os.getpid()}"
    with open(region, "wb") as f:
        f.truncate(REGION_BYTES)
    console = Console([*QEMU[arch], "-m", "128M", "-nographic", "-monitor", "none", "-serial", "stdio",
                       "-object", f"memory-backend-file,id=shm0,share=on,mem-path={region},size={REGION_BYTES}",
                       "-device", "ivshmem-plain,memdev=shm0",
                       "-kernel", str(REPO / "build" / "baremetal" / arch / "rtvb-probe.elf")])
    deadline = time.monotonic() + 60
    while not console.line(deadline).startswith("ready "):   # OpenSBI's banner first on riscv64
        pass
    yield console, region
    console.close()
    os.unlink(region)


def linux(region: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([str(PROBE), "ipc", "--transport", "shm", "--shm-path", region, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def records(proc: subprocess.Popen) -> tuple[list[dict], int]:
    import json
    out, _ = proc.communicate(timeout=240)
    return [json.loads(line) for line in out.splitlines()], proc.returncode


def image_serves(console: Console, *args: str) -> tuple[threading.Thread, dict]:
    """The image's `ipc --serve` running in a thread; its (records, errors, exit) land in the dict."""
    got: dict = {}

    def serve():
        got["run"] = console.run("ipc", "--serve", "--shm-pci", "auto", "--timeout-s", "60", *args, timeout_s=240)
    thread = threading.Thread(target=serve)
    thread.start()
    return thread, got


def client_args(sizes: list[int]) -> list[str]:
    return ["--sizes", ",".join(map(str, sizes)), "--count", str(COUNT), "--warmup", str(WARMUP)]


def check_clean_session(client: list[dict], server: list[dict], sizes: list[int], image_side: str) -> None:
    """Every size measured COUNT times, every message the client sent checked by the server, both sides
    verified, and the host's decoder reading the client's results with their histograms."""
    from rtvbench.analysis.histogram import result_histogram
    assert client[-1]["status"] == server[-1]["status"] == "ok", (client[-1], server[-1])
    c = [r for r in client if r["type"] == "result"]
    s = [r for r in server if r["type"] == "result"]
    assert [r["size_bytes"] for r in c] == [r["size_bytes"] for r in s] == sizes
    for cr, sr in zip(c, s):
        assert (cr["role"], sr["role"], cr["transport"]) == ("client", "server", "shm")
        assert cr["count"] == COUNT and cr["complete"] and cr["verified"] is True
        assert sr["messages"] == COUNT + WARMUP and sr["bad_requests"] == 0 and sr["verified"] is True
        assert result_histogram(cr).total == COUNT
        assert cr["min_ns"] <= cr["p50_ns"] <= cr["max_ns"]
    image_meta = (client if image_side == "client" else server)[0]
    assert image_meta["platform"] == "baremetal" and image_meta["params"]["shm_bytes"] == REGION_BYTES
    assert image_meta["params"]["shm"].startswith("ivshmem 0000:00:")


def test_image_serves_a_linux_client_at_every_size(image):
    console, region = image
    sizes = every_size()
    thread, got = image_serves(console)
    client = linux(region, "--connect", "shm", *client_args(sizes))
    client_records, rc = records(client)
    thread.join(300)
    server_records, errors, status = got["run"]
    assert (rc, status, errors) == (0, 0, [])
    check_clean_session(client_records, server_records, sizes, "server")


def test_image_is_the_client_of_a_linux_server_at_every_size(image):
    from rtvbench.kinds.ipc.decode import IpcKind
    from rtvbench.results import Measurement
    console, region = image
    sizes = every_size()
    server = linux(region, "--serve")
    assert server.stdout.readline().startswith('{"type":"meta"')   # the region is ready
    client_records, errors, status = console.run("ipc", "--connect", "shm", "--shm-pci", "auto",
                                                 *client_args(sizes), timeout_s=240)
    server_records, rc = records(server)
    assert (rc, status, errors) == (0, 0, [])
    check_clean_session(client_records, [{"type": "meta"}, *server_records], sizes, "client")
    results = [r for r in client_records if r["type"] == "result"]
    m = Measurement(1, "partition", "idle", "ipc", "ipc", 0, "ok", [], [], None, None, client_records[0], results)
    decoded = IpcKind().decode(m)
    assert {f"shm {size} B" for size in sizes} == set(decoded.distributions)
    assert all(decoded.distributions[f"shm {size} B"].total == COUNT for size in sizes)


def test_the_image_client_measures_for_a_duration_and_the_server_counts_every_round_trip(image):
    console, region = image
    server = linux(region, "--serve")
    server.stdout.readline()
    client_records, errors, status = console.run("ipc", "--connect", "shm", "--shm-pci", "auto", "--sizes", "64",
                                                 "--duration-s", "0.2", "--warmup", "2", timeout_s=240)
    server_records, rc = records(server)
    assert (rc, status, errors) == (0, 0, [])
    [c] = [r for r in client_records if r["type"] == "result"]
    [s] = [r for r in server_records if r["type"] == "result"]
    assert client_records[0]["params"]["count"] is None and client_records[0]["params"]["duration_ns"] == 200_000_000
    assert c["count"] > 0 and s["messages"] == c["count"] + 2 and c["verified"] is s["verified"] is True
    # The phase ends at the first round trip that finishes past the duration.
    assert c["elapsed_ns"] >= 200_000_000


def corrupted(results: list[dict]) -> dict:
    bad = [r for r in results if r.get("type") == "result" and r.get("verified") is False]
    assert len(bad) == 1, results
    return bad[0]


def test_a_request_the_linux_client_corrupts_is_found_by_the_image(image):
    console, region = image
    thread, got = image_serves(console)
    # Message 1 is the phase's control message, 2.. its requests: the 5th is request 3 of 16 bytes.
    client_records, rc = records(linux(region, "--connect", "shm", *client_args([16]), "--x-corrupt-after", "5"))
    thread.join(300)
    server_records, _, status = got["run"]
    s = corrupted(server_records)
    # The client ends the session at the corruption, without BYE: the server says it was cut off, as on Linux.
    assert s["bad_requests"] == 1 and status == 3 and "closed" in server_records[-1]["error"]
    c = corrupted(client_records)["corruption"]
    assert (c["direction"], c["message"], c["offset"], c["got"], c["messages_affected"]) == \
        ("request", 3, 15, c["expected"] ^ 1, 1)
    assert rc == 3 and client_records[-1]["status"] == "error"


def test_a_reply_the_image_corrupts_is_found_by_the_linux_client(image):
    console, region = image
    thread, got = image_serves(console, "--x-corrupt-after", "5")
    client_records, rc = records(linux(region, "--connect", "shm", *client_args([64])))
    thread.join(300)
    c = corrupted(client_records)
    assert (c["corruption"]["direction"], c["corruption"]["message"], c["corruption"]["offset"]) == ("reply", 3, 63)
    assert rc == 3


def test_a_request_the_image_corrupts_is_found_by_the_linux_server(image):
    console, region = image
    server = linux(region, "--serve")
    server.stdout.readline()
    client_records, _, status = console.run("ipc", "--connect", "shm", "--shm-pci", "auto", *client_args([256]),
                                            "--x-corrupt-after", "5", timeout_s=240)
    server_records, _ = records(server)
    assert corrupted(server_records)["bad_requests"] == 1
    c = corrupted(client_records)
    assert (c["corruption"]["direction"], c["corruption"]["message"], c["corruption"]["offset"]) == ("request", 3, 255)
    assert status == 3 and client_records[-1]["status"] == "error"


def test_a_reply_the_linux_server_corrupts_is_found_by_the_image(image):
    console, region = image
    server = linux(region, "--serve", "--x-corrupt-after", "5")
    server.stdout.readline()
    client_records, _, status = console.run("ipc", "--connect", "shm", "--shm-pci", "auto", *client_args([4096]),
                                            timeout_s=240)
    records(server)
    c = corrupted(client_records)
    assert (c["corruption"]["direction"], c["corruption"]["message"], c["corruption"]["offset"]) == ("reply", 3, 4095)
    assert c["corruption"]["got"] == c["corruption"]["expected"] ^ 1
    assert status == 3 and "differ" in client_records[-1]["error"]


def test_sizes_beyond_the_region_and_bad_options_are_refused_with_exit_2(image):
    console, _ = image
    for args in (["--connect", "shm", "--sizes", str(SLOT_BYTES + 64)], ["--serve", "--connect", "shm"], [],
                 ["--connect", "tcp"], ["--serve", "--count", "0"]):
        out, errors, status = console.run("ipc", *args)
        assert (out, status, len(errors)) == ([], 2, 1), args
        assert errors[0].startswith("rtvb-probe ipc: ")


def test_without_an_ivshmem_device_the_run_ends_in_an_error_naming_it():
    build_images("qemu-system-aarch64", "aarch64-linux-gnu-gcc")
    console = Console([*QEMU["aarch64"], "-m", "128M", "-nographic", "-monitor", "none", "-serial", "stdio",
                       "-kernel", str(REPO / "build" / "baremetal" / "aarch64" / "rtvb-probe.elf")])
    try:
        assert console.wait_ready().startswith("ready ")
        out, errors, status = console.run("ipc", "--connect", "shm", "--sizes", "16")
    finally:
        console.close()
    assert (status, errors, [r["type"] for r in out]) == (3, [], ["meta", "end"])
    assert out[-1]["status"] == "error" and "no such PCI device" in out[-1]["error"]
