"""mem-lat and mem-bw on the bare-metal images (docs/baremetal.md), aarch64 and riscv64, under QEMU's TCG.

TCG models no cache, so how fast a size is says nothing of a machine here; what is checked is what is
deterministic: every chain is a single cycle (its lap is its slot count: each slot visited once a lap),
every bandwidth kernel leaves the sum a host computes from the fill pattern and the pass count, the random
order visits every line once, and the host's mem-lat and mem-bw decoders read the image's results."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from baremetal_console import REPO, Console, build_images

pytestmark = [pytest.mark.qemu, pytest.mark.functional]

MASK = (1 << 64) - 1
QEMU = {
    "aarch64": ["qemu-system-aarch64", "-machine", "virt,gic-version=2", "-cpu", "cortex-a53", "-m", "128M",
                "-nographic", "-monitor", "none", "-serial", "stdio"],
    "riscv64": ["qemu-system-riscv64", "-machine", "virt", "-m", "128M", "-bios", "default", "-nographic",
                "-monitor", "none", "-serial", "stdio"],
}


@pytest.fixture(scope="module", params=sorted(QEMU))
def image(request):
    build_images(QEMU[request.param][0], "aarch64-linux-gnu-gcc", "riscv64-linux-gnu-gcc")
    console = Console(QEMU[request.param] + ["-kernel", str(REPO / "build" / "baremetal" / request.param /
                                                            "rtvb-probe.elf")])
    deadline = time.monotonic() + 30
    while not console.line(deadline).startswith("ready "):    # riscv64: OpenSBI's banner first
        pass
    console.arch = request.param
    yield console
    console.close()


def _framed(records: list[dict], sub: str, arch: str) -> list[dict]:
    assert records[0]["type"] == "meta" and records[-1] == {**records[-1], "type": "end", "status": "ok"}
    assert (records[0]["subcommand"], records[0]["arch"], records[0]["platform"]) == (sub, arch, "baremetal")
    return [r for r in records if r["type"] == "result"]


def splitmix64_words(n: int) -> list[int]:
    """The fill of the image's source buffer: splitmix64's outputs from state 0."""
    out, s = [], 0
    for _ in range(n):
        s = (s + 0x9E3779B97F4A7C15) & MASK
        z = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        out.append(z ^ (z >> 31))
    return out


def read_sum(words: list[int]) -> int:
    """The read kernel's result: word j of every 64-byte line XORed with word j + 4, all summed mod 2^64."""
    return sum(words[i + j] ^ words[i + j + 4] for i in range(0, len(words), 8) for j in range(4)) & MASK


def test_mem_lat_chains_visit_every_slot_once_a_lap(image):
    records, errors, status = image.run("mem-lat", "--sizes", "4K,256K,2M", "--samples", "3", timeout_s=120)
    assert (status, errors) == (0, [])
    results = _framed(records, "mem-lat", image.arch)
    assert [(r["mode"], r["size_bytes"]) for r in results] == \
        [(m, s) for m in ("seq", "random") for s in (4096, 256 << 10, 2 << 20)]
    for r in results:
        assert r["slots"] == r["size_bytes"] // 64 and r["lap_slots"] == r["slots"], r
        assert 0 < r["min_ns"] <= r["ns_per_access"] <= r["max_ns"]
    from rtvbench.kinds.mem_lat.decode import MemLatKind
    figures = MemLatKind().quantities(SimpleNamespace(results=results))
    assert len(figures) == 6 and all(v == results[i]["ns_per_access"] for i, (_, v) in enumerate(figures.values()))


def test_mem_bw_kernels_leave_the_host_computed_sums(image):
    records, errors, status = image.run("mem-bw", "--sizes", "16K,1M", "--samples", "3", timeout_s=120)
    assert (status, errors) == (0, [])
    results = _framed(records, "mem-bw", image.arch)
    ops = ("read", "write", "rmw", "copyloop", "rand_rd", "rand_wr")
    assert [(r["op"], r["size_bytes"], r["thread"]) for r in results] == \
        [(op, s, t) for s in (16 << 10, 1 << 20) for op in ops for t in (0, "all")]
    for r in results:
        pattern = splitmix64_words(r["size_bytes"] // 8)
        fill = read_sum(pattern)
        passes = r["passes"]
        assert passes == 1 + 3 * r["passes_per_sample"] and r["bps"] > 0
        expected = {"read": fill, "copyloop": fill, "rand_rd": fill, "write": 0, "rand_wr": 0,
                    "rmw": read_sum([(w + passes * (passes + 1) // 2) & MASK for w in pattern])}
        assert r["sum"] == expected[r["op"]], r["op"]
        if r["op"].startswith("rand_"):
            assert r["random_sum"] == r["sequential_sum"] == fill and r["order_verified"] is True
        if r["op"] in ("write", "rand_wr"):
            assert r["unwritten_words"] == 0
    from rtvbench.kinds.mem_bw.decode import MemBwKind
    figures = MemBwKind().quantities(SimpleNamespace(results=results))
    assert sorted(figures) == sorted(f"bw.{op}.{s}" for op in ops for s in ("16KiB", "1MiB"))
    assert figures["bw.read.1MiB"][1] == next(r["bps"] for r in results if r["op"] == "read"
                                            and r["size_bytes"] == 1 << 20 and r["thread"] == "all")


def test_mem_commands_refuse_what_does_not_fit(image):
    _, errors, status = image.run("mem-lat", "--sizes", "96M")
    assert status == 2 and "a size does not fit" in errors[0] and "BOARD_MEM_AREA_BYTES" in errors[0]
    _, errors, status = image.run("mem-lat", "--sizes", "4K,", "--mode", "seq")
    assert status == 2 and errors == ["rtvb-probe mem-lat: bad --sizes '4K,'; give up to 32 sizes such as "
                                      "16K,64M (suffixes K, M, G)."]
    _, errors, status = image.run("mem-bw", "--ops", "read,memcpy")
    assert status == 2 and errors[0].startswith("rtvb-probe mem-bw: bad value 'read,memcpy'")
    _, errors, status = image.run("mem-bw", "--sizes", "100")
    assert status == 2 and "multiple of 64" in errors[0]
    records, errors, status = image.run("mem-lat", "--sizes", "1K", "--mode", "random", "--samples", "1")
    assert (status, errors) == (0, []) and _framed(records, "mem-lat", image.arch)[0]["lap_slots"] == 16
