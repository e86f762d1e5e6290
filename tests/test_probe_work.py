"""End-to-end tests of `rtvb-probe work`: self-verifying CPU workload kernels.

Ground truth for the checksums is computed here, independently of the probe:
the inputs are regenerated from the documented splitmix64 stream
(docs/probe/work.md) and the outputs computed with hashlib, zlib, numpy,
scipy, audioop, the openssl command line, or plain Python, then reduced with
the documented FNV-1a checksum. A kernel whose C code computes anything else
(or whose input generation drifts from the documentation) fails here.
Cross-architecture: the aarch64, armhf and riscv64 builds, run under
qemu-user, must report the same checksums as the native build.
"""

from __future__ import annotations

import hashlib
import math
import re
import shutil
import struct
import subprocess
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

from probe_records import records

pytestmark = pytest.mark.functional

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import audioop  # an independent IMA ADPCM codec (CPython's, until 3.12)
    except ImportError:  # pragma: no cover - Python >= 3.13
        audioop = None

REPO = Path(__file__).resolve().parent.parent
KERNELS = ["basicmath", "bitcount", "qsort", "dijkstra", "patricia", "strsearch", "sha256", "crc32", "fft",
           "adpcm", "blowfish", "aes128", "aes256", "smooth", "edges", "matmul_naive", "matmul_blocked",
           "intmix", "fpmix", "lu"]
SEED = 1
MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
FNV_INIT = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3


# ---------------------------------------------------------------- probe runs


def run_work(cmd: list[str], *args: str, timeout: float = 120) -> tuple[int, list[dict], str]:
    proc = subprocess.run([*cmd, "work", *args], capture_output=True, text=True, timeout=timeout)
    return proc.returncode, records(proc.stdout), proc.stderr


def results(recs: list[dict]) -> dict[tuple[str, str], dict]:
    return {(r["kernel"], r["size"]): r for r in recs if r["type"] == "result"}


@pytest.fixture(scope="module")
def small_run(probe) -> tuple[int, list[dict], str]:
    """Every kernel at the small size, 2 repetitions, default seed."""
    return run_work([str(probe)], "--size", "small", "--repetitions", "2")


@pytest.fixture(scope="module")
def small(small_run) -> dict[str, dict]:
    return {k: r for (k, s), r in results(small_run[1]).items()}


# ------------------------------------------------- documented generator, checksum

class Rng:
    """splitmix64, as in probe/work/work.h; `skip` draws already taken."""

    def __init__(self, seed: int, skip: int = 0):
        self.s = (seed + skip * GOLDEN) & MASK

    def next(self) -> int:
        self.s = (self.s + GOLDEN) & MASK
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n

    def unit(self) -> float:
        return (self.next() >> 11) * 2.0 ** -53


def draws(seed: int, count: int, skip: int = 0) -> np.ndarray:
    """Draws skip .. skip + count - 1 of the stream, vectorised (uint64 wraps)."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + (np.arange(skip + 1, skip + count + 1, dtype=np.uint64) * np.uint64(GOLDEN))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def rng_bytes(seed: int, n: int, skip: int = 0) -> bytes:
    return draws(seed, (n + 7) // 8, skip).astype("<u8").tobytes()[:n]


def fnv(data: bytes, h: int = FNV_INIT) -> int:
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


def fnv_ints(values, h: int = FNV_INIT) -> int:
    """FNV of integers fed as 8 bytes, little-endian, two's complement."""
    return fnv(np.asarray(values, dtype=np.int64).astype("<i8").tobytes(), h)


def fnv_u64(h: int, v: int) -> int:
    return fnv((v & MASK).to_bytes(8, "little"), h)


# --------------------------------------------------- independent references

def ref_basicmath(seed: int, inp: dict) -> int:
    r, n = Rng(seed), inp["cubics"]
    h = FNV_INIT
    for _ in range(n):                      # roots are known by construction
        one = r.below(4) == 0
        r.below(8)                          # leading coefficient: no effect on roots
        if one:
            roots = [r.below(101) - 50]
            r.below(41), r.below(50)        # the complex pair
        else:
            r1 = r.below(101) - 50
            r2 = r.below(101) - 50
            while r2 == r1:
                r2 = r.below(101) - 50
            r3 = r.below(101) - 50
            while r3 in (r1, r2):
                r3 = r.below(101) - 50
            roots = sorted([r1, r2, r3])
        h = fnv_ints([len(roots), *roots], h)
    roots_out = []
    for _ in range(inp["square_roots"]):
        shift = r.below(64)
        roots_out.append(math.isqrt(r.next() >> shift))
    h = fnv(np.array(roots_out, dtype="<u8").tobytes(), h)
    out = []
    for _ in range(inp["conversions"]):
        deg = (r.below(720001) - 360000) / 1000.0
        rad = deg * (math.pi / 180.0)        # IEEE * and /: the same bits as C
        out += [rad, rad * (180.0 / math.pi)]
    return fnv(struct.pack(f"<{len(out)}d", *out), h)


def ref_bitcount(seed: int, inp: dict) -> int:
    v = [int(x) for x in draws(seed, inp["words"])]
    total = weighted = 0
    for i, x in enumerate(v):
        w, hi = x & 0xFFFFFFFF, x >> 32
        w = w & hi if x >> 62 == 0 else w | hi if x >> 62 == 1 else w
        c = bin(w).count("1")
        total += c
        weighted += i * c
    return fnv_u64(fnv_u64(FNV_INIT, total), weighted)


def gen_strings(seed: int, n: int) -> list[bytes]:
    r, out = Rng(seed), []
    for _ in range(n):
        length = 4 + r.below(13)
        out.append(bytes(97 + r.below(26) for _ in range(length)))
    return out


def ref_qsort(seed: int, inp: dict) -> int:
    # bytes order is strcmp's order: unsigned, a prefix first
    return fnv(b"".join(s + b"\0" for s in sorted(gen_strings(seed, inp["strings"]))))


def ref_dijkstra(seed: int, inp: dict) -> int:
    from scipy.sparse.csgraph import dijkstra

    r, v, ns = Rng(seed), inp["vertices"], inp["sources"]
    adj = np.zeros((v, v))
    for i in range(v):
        for j in range(v):
            if i != j and r.below(100) < 10:
                adj[i, j] = 1 + r.below(1000)
    assert int(np.count_nonzero(adj)) == inp["edges"]
    dist = dijkstra(adj, directed=True, indices=[k * v // ns for k in range(ns)])
    return fnv_ints(np.where(np.isinf(dist), 0xFFFFFFFF, dist).astype(np.int64).ravel())


def ref_patricia(seed: int, inp: dict) -> int:
    n, m = inp["keys"], inp["lookups"]
    kv = [int(x) for x in draws(seed, n)]
    keys = [x & 0xFFFFFFFF if x >> 63 else 0x0A000000 | (x & 0xFFFFFF) for x in kv]
    first: dict[int, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    h = fnv_u64(FNV_INIT, len(first))
    answers = []
    for x in (int(q) for q in draws(seed, m, skip=n)):
        q = keys[(x >> 1) % n] if x & 1 else 0x0A000000 | ((x >> 8) & 0xFFFFFF) if x & 2 else x >> 32
        answers.append(first.get(q, 0xFFFFFFFF))
    return fnv_ints(answers, h)


def gen_text(seed: int, t: int) -> bytes:
    words = draws(seed, (t + 15) // 16)
    nib = (words[:, None] >> (np.arange(16, dtype=np.uint64) * np.uint64(4))) & np.uint64(15)
    return bytes((nib.ravel()[:t] + 97).astype(np.uint8))


def ref_strsearch(seed: int, inp: dict) -> int:
    t = inp["text_bytes"]
    text = gen_text(seed, t)
    r = Rng(seed, skip=(t + 15) // 16)
    h = FNV_INIT
    for _ in range(inp["patterns"]):
        m = 3 + r.below(8)
        if r.below(2) == 0:
            pos = r.below(t - m + 1)
            pat = text[pos:pos + m]
        else:
            pat = bytes(97 + r.below(16) for _ in range(m))
        count, first, i = 0, MASK, text.find(pat)
        while i >= 0:                        # overlapping occurrences too
            first = i if count == 0 else first
            count += 1
            i = text.find(pat, i + 1)
        h = fnv_u64(fnv_u64(h, count), first)
    return h


def ref_sha256(seed: int, inp: dict) -> int:
    buf, d = rng_bytes(seed, inp["bytes"]), hashlib.sha256()
    for _ in range(inp["passes"]):
        d.update(buf)
    return int.from_bytes(d.digest()[:8], "big")


def ref_crc32(seed: int, inp: dict) -> int:
    buf, crc = rng_bytes(seed, inp["bytes"]), 0
    for _ in range(inp["passes"]):
        crc = zlib.crc32(buf, crc)
    return crc


def ref_fft(seed: int, inp: dict) -> int:
    n = inp["points"]
    x = (draws(seed, 2 * n) % np.uint64(2048)).astype(np.int64) - 1024
    spectrum = np.fft.fft(x[0::2] + 1j * x[1::2])
    q = np.empty(2 * n, dtype=np.int64)
    q[0::2], q[1::2] = np.rint(spectrum.real), np.rint(spectrum.imag)
    return fnv_ints(q)


def gen_pcm(seed: int, n: int) -> np.ndarray:
    r, out = Rng(seed), np.empty(n, dtype=np.int16)
    half = amp = 0
    for i in range(n):
        if i % 4096 == 0:
            half, amp = 10 + r.below(100), r.below(12000)
        t = i % (2 * half)
        tri = -amp + 2 * amp * t // half if t < half else amp - 2 * amp * (t - half) // half
        out[i] = max(-32768, min(32767, tri + r.below(1001) - 500))
    return out


def ref_adpcm(seed: int, inp: dict) -> int:
    if audioop is None:
        pytest.skip("audioop (an independent IMA ADPCM codec) left Python in 3.13")
    pcm = gen_pcm(seed, inp["samples"]).astype("<i2").tobytes()
    codes, _ = audioop.lin2adpcm(pcm, 2, None)   # first sample in the high nibble
    decoded, _ = audioop.adpcm2lin(codes, 2, None)
    return fnv(codes + np.frombuffer(decoded, dtype=np.int16).astype("<i2").tobytes())


def openssl_cbc(cipher: str, key: bytes, iv: bytes, data: bytes, legacy: bool = False) -> bytes:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is the independent cipher implementation")
    cmd = ["openssl", "enc", f"-{cipher}", "-K", key.hex(), "-iv", iv.hex(), "-nopad"]
    if legacy:
        cmd += ["-provider", "legacy", "-provider", "default"]
    proc = subprocess.run(cmd, input=data, capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"openssl cannot do {cipher}: {proc.stderr.decode(errors='replace').strip()[:100]}")
    return proc.stdout


def ref_cipher(cipher: str, iv_bytes: int, legacy: bool, seed: int, inp: dict) -> int:
    kb, b = inp["key_bytes"], inp["bytes"]
    stream = rng_bytes(seed, 8 * ((kb + 7) // 8 + (iv_bytes + 7) // 8) + b)
    key = stream[:kb]
    iv = stream[(kb + 7) // 8 * 8:][:iv_bytes]
    buf = stream[((kb + 7) // 8 + (iv_bytes + 7) // 8) * 8:][:b]
    ct = openssl_cbc(cipher, key, iv, buf * inp["passes"], legacy)
    return fnv(ct[-b:])


def gen_image(seed: int, w: int) -> np.ndarray:
    y, x = np.mgrid[0:w, 0:w]
    img = ((255 * x // w + 255 * y // w) // 2).astype(np.int64)
    r = Rng(seed)
    for _ in range(w // 8):
        x0, y0 = r.below(w), r.below(w)
        rw, rh = 1 + r.below(w // 4), 1 + r.below(w // 4)
        img[y0:y0 + rh, x0:x0 + rw] = r.below(256)
    noise = (draws(seed, w * w, skip=5 * (w // 8)) % np.uint64(33)).astype(np.int64) - 16
    return np.clip(img + noise.reshape(w, w), 0, 255)


def convolve(img: np.ndarray, kern: np.ndarray) -> np.ndarray:
    k, w = kern.shape[0], img.shape[0]
    pad = np.pad(img, k // 2, mode="edge")
    return sum(int(kern[dy, dx]) * pad[dy:dy + w, dx:dx + w] for dy in range(k) for dx in range(k))


def ref_smooth(seed: int, inp: dict) -> int:
    img = gen_image(seed, inp["width"])
    b3, b5 = np.array([1, 2, 1]), np.array([1, 4, 6, 4, 1])
    out3 = (convolve(img, np.outer(b3, b3)) + 8) >> 4
    out5 = (convolve(img, np.outer(b5, b5)) + 128) >> 8
    return fnv(out5.astype(np.uint8).tobytes(), fnv(out3.astype(np.uint8).tobytes()))


def ref_edges(seed: int, inp: dict) -> int:
    img = gen_image(seed, inp["width"])
    sx = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]])
    gx, gy = convolve(img, sx), convolve(img, sx.T)
    mag = np.minimum(np.floor(np.sqrt((gx * gx + gy * gy).astype(np.float64))), 255).astype(np.uint8)
    return fnv_u64(fnv(mag.tobytes()), int(np.count_nonzero(mag > 128)))


def ref_matmul(seed: int, inp: dict) -> int:
    n = inp["n"]
    v = ((draws(seed, 2 * n * n) % np.uint64(2001)).astype(np.int64) - 1000) / 1024.0
    c = (v[:n * n].reshape(n, n) @ v[n * n:].reshape(n, n)) * 2.0 ** 20
    assert np.array_equal(c, np.rint(c))     # exact, whatever the summation order
    return fnv_ints(c.astype(np.int64).ravel())


def ref_lu(seed: int, inp: dict) -> int:
    from scipy.linalg import lu_factor

    n = inp["n"]
    a = ((draws(seed, n * n) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53 * 2.0 - 1.0).reshape(n, n)
    x_true = 1.0 + np.arange(n) % 5
    _, piv = lu_factor(a)                    # LAPACK dgetrf: the same pivoting rule
    x = np.linalg.solve(a, a @ x_true)
    return fnv_ints(np.concatenate([piv, np.rint(x).astype(np.int64)]))


NAMES = [b"RTVBENCH INTEGER MIX, RECORD ONE", b"rtvbench integer mix, record two", b"A THIRD STRING OF THE MIX",
         b"fourth string: compared and copied", b"FIFTH - THE LONGEST STRING OF ALL EIGHT", b"sixth",
         b"SEVENTH STRING, MIDDLE LENGTH", b"eighth string of the integer mix"]


def ref_intmix(seed: int, inp: dict) -> int:
    """The documented design of intmix, re-implemented in Python."""
    def cdiv(a: int, b: int) -> int:          # C division truncates toward zero
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q

    def crem(a: int, b: int) -> int:
        return a - b * cdiv(a, b)

    r = Rng(seed)
    x = r.next() & 0xFFFFFFFF
    recs = []
    for i in range(8):
        kind, value = r.below(5), r.below(2001) - 1000
        recs.append({"id": i, "kind": kind, "value": value, "name": NAMES[r.below(8)]})
    grid = [[0] * 16 for _ in range(16)]
    copied = swaps = idle = 0
    for it in range(inp["iterations"]):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        p, nxt = recs[it % 8], recs[(it + 1) % 8]
        y, k = x >> 16, p["kind"]
        p["kind"] = ((1 if y & 1 else 0) if k == 0 else (2 if y & 2 else 3) if k == 1 else
                     (3 if y % 3 == 0 else 4) if k == 2 else (1 if y & 4 else 4) if k == 3 else 0)
        if p["kind"] == 1:
            p["name"] = NAMES[(x >> 8) & 7]
            copied += len(p["name"])
        elif p["kind"] == 2:
            d = ((x >> 4) & 1023) - 512 or 7
            v = crem(cdiv(p["value"], d) * 37 + crem(p["value"], d) * 5 - (x & 0xFF), 2001)
            p["value"] = v - 2001 if v > 1000 else v + 2001 if v < -1000 else v
        elif p["kind"] == 3:
            if p["name"] > nxt["name"]:
                p["name"], nxt["name"] = nxt["name"], p["name"]
                swaps += 1
        elif p["kind"] == 4:
            g = grid[p["id"]]
            g[(x >> 12) & 15] = (g[(x >> 12) & 15] + p["value"]) & 0xFFFFFFFF
        else:
            idle += 1
        i, j = (x >> 20) & 15, (x >> 24) & 15
        if i == j:
            grid[i][j] ^= x
        elif i < j:
            grid[i][j] = (grid[j][i] + i * j) & 0xFFFFFFFF
        else:
            grid[i][j] = (grid[i][j] - (grid[i][i] >> 1)) & 0xFFFFFFFF
    h = FNV_INIT
    for p in recs:
        h = fnv(p["name"], fnv_ints([p["id"], p["kind"], p["value"]], h))
    return fnv_ints([v for row in grid for v in row] + [copied, swaps, idle, x], h)


def ref_fpmix(seed: int, inp: dict) -> int:
    """The documented design of fpmix in Python (libm through the math module)."""
    r, t = Rng(seed), 0.499975
    e0, e1, e2, e3 = 1.0, -1.0, -1.0, -1.0
    counts, sum_sin, acc = [0, 0, 0, 0], 0.0, 0.0
    for _ in range(inp["iterations"]):
        x = -3.0 + 6.0 * r.unit()
        y = 0.1 + 9.9 * r.unit()
        sn, cs = math.sin(x), math.cos(x)
        sum_sin += sn
        if sn > 0.5:
            counts[0] += 1
            acc += sn - cs
        elif cs < -0.25:
            counts[1] += 1
            acc -= cs * 0.5
        counts[2] += math.exp(math.log(y)) > 2.0
        counts[3] += math.sqrt(y) * 3.0 < x + 3.0
        f0, f1 = (e0 + e1 + e2 - e3) * t, (e0 + e1 - e2 + e3) * t
        f2, f3 = (e0 - e1 + e2 + e3) * t, (-e0 + e1 + e2 + e3) * t
        e0, e1, e2, e3 = f0 * 0.5 + sn, f1 * 0.5 + cs, f2 * 0.5, f3 * 0.5
        a, b = e0 * t, e1 * t
        e2, e3 = (e2 + a - b) * 0.5, (e3 - a + b) * 0.5
    q = [round(v * 2.0 ** 30) for v in (e0, e1, e2, e3)]
    return fnv_ints([*counts, round(sum_sin * 1000.0), round(acc * 1000.0), *q])


REFERENCES = {
    "basicmath": ref_basicmath, "bitcount": ref_bitcount, "qsort": ref_qsort, "dijkstra": ref_dijkstra,
    "patricia": ref_patricia, "strsearch": ref_strsearch, "sha256": ref_sha256, "crc32": ref_crc32,
    "fft": ref_fft, "adpcm": ref_adpcm,
    "blowfish": lambda s, i: ref_cipher("bf-cbc", 8, True, s, i),
    "aes128": lambda s, i: ref_cipher("aes-128-cbc", 16, False, s, i),
    "aes256": lambda s, i: ref_cipher("aes-256-cbc", 16, False, s, i),
    "smooth": ref_smooth, "edges": ref_edges, "matmul_naive": ref_matmul, "matmul_blocked": ref_matmul,
    "intmix": ref_intmix, "fpmix": ref_fpmix, "lu": ref_lu,
}


# --------------------------------------------------------------------- tests

def test_every_kernel_verifies_on_small_with_consistent_figures(small_run, small):
    rc, recs, err = small_run
    failed = {k: r.get("error") for k, r in small.items() if not r["verified"]}
    assert rc == 0 and not failed, (failed, err)
    assert recs[0]["type"] == "meta" and recs[-1]["type"] == "end" and recs[-1]["status"] == "ok"
    assert recs[0]["params"] == {"kernels": KERNELS, "sizes": ["small"], "repetitions": 2, "seed": SEED,
                                 "expect": {}}
    assert not [r for r in recs if r["type"] == "warning"]
    assert sorted(small) == sorted(KERNELS)
    for name, r in small.items():
        assert r["verified"] is True, (name, r.get("error"))
        assert r["checksum"] == r["expected"] and re.fullmatch(r"[0-9a-f]{16}", r["checksum"]), name
        assert "error" not in r
        times = r["times_ns"]
        assert r["repetitions"] == 2 and len(times) == 2 and all(isinstance(t, int) and t > 0 for t in times)
        assert r["min_ns"] == min(times) and r["max_ns"] == max(times)
        assert r["median_ns"] == sum(times) // 2 and r["mean_ns"] in (sum(times) // 2, (sum(times) + 1) // 2)
        assert r["ops"] > 0 and r["input"], name
        assert r["ops_per_s"] == pytest.approx(r["ops"] * 1e9 / r["median_ns"], rel=1e-6)
    # The runs follow each other inside the probe's life: their wall times add up to less than it.
    end = recs[-1]
    assert sum(t for r in small.values() for t in r["times_ns"]) < end["elapsed_ns"]
    # The small size is small: the whole run, every kernel twice with its preparation and checks, takes
    # about 20 ms of CPU time here (the large size 5 s). CPU time, unlike the runs' wall times, is not
    # stretched by other processes taking turns on the CPU.
    assert 0 < end["cpu_time_ns"] < 1_000_000_000, end
    for name in ("sha256", "crc32", "aes128", "aes256", "blowfish", "strsearch"):
        assert small[name]["op"] == "byte" and small[name]["bps"] == small[name]["ops_per_s"]
    for name in ("lu", "matmul_naive", "matmul_blocked", "fft"):
        assert small[name]["op"] == "flop" and small[name]["flops"] == small[name]["ops_per_s"]
    n = small["lu"]["input"]["n"]
    assert abs(small["lu"]["ops"] - (2 / 3 * n ** 3 + 2 * n ** 2)) <= 1
    assert small["matmul_naive"]["ops"] == 2 * small["matmul_naive"]["input"]["n"] ** 3
    assert small["intmix"]["op"] == "iteration"
    assert small["intmix"]["iterations_per_s"] == small["intmix"]["ops_per_s"]
    assert small["fpmix"]["kflopish_per_s"] == pytest.approx(small["fpmix"]["ops_per_s"] / 1000)
    assert small["lu"]["detail"]["normalized_residual"] < 16
    assert small["fft"]["detail"]["max_roundtrip_error"] < 1e-9


@pytest.mark.parametrize("kernel", KERNELS)
def test_checksum_matches_an_independent_computation(small, kernel):
    r = small[kernel]
    assert int(r["checksum"], 16) == REFERENCES[kernel](r["seed"], r["input"])


def test_sha256_reports_the_whole_digest(small):
    r = small["sha256"]
    buf = rng_bytes(SEED, r["input"]["bytes"])
    assert r["output"] == hashlib.sha256(buf * r["input"]["passes"]).hexdigest()


def test_large_checksums_match_independent_computations(probe):
    """The built-in large checksums, for the kernels Python computes quickly."""
    chosen = ["dijkstra", "strsearch", "sha256", "crc32", "fft", "blowfish", "aes128", "aes256", "matmul_blocked",
              "lu"]
    rc, recs, err = run_work([str(probe)], "--kernels", ",".join(chosen), "--size", "large",
                             "--repetitions", "1")
    assert rc == 0, err
    for (name, size), r in results(recs).items():
        assert r["verified"] is True, (name, r.get("error"))
        assert int(r["checksum"], 16) == REFERENCES[name](r["seed"], r["input"]), name


def test_blowfish_tables_are_the_digits_of_pi():
    """probe/work/pi_words.h against pi computed here (Machin, exact integers)."""
    text = (REPO / "probe" / "work" / "pi_words.h").read_text()
    table = [int(w, 16) for w in re.findall(r"0x([0-9A-F]{8})", text.split("{", 1)[1])]
    assert len(table) == 18 + 4 * 256
    bits = 32 * len(table) + 64

    def atan_inv(x: int) -> int:
        total = term = (1 << bits) // x
        k, sign = 1, -1
        while term:
            term //= x * x
            total += sign * (term // (2 * k + 1))
            sign, k = -sign, k + 1
        return total

    pi = 16 * atan_inv(5) - 4 * atan_inv(239)
    frac = (pi >> 64) & ((1 << (32 * len(table))) - 1)
    assert table == [(frac >> (32 * (len(table) - 1 - i))) & 0xFFFFFFFF for i in range(len(table))]


def test_a_wrong_expected_checksum_fails_the_run(probe, small):
    good = small["crc32"]["checksum"]
    wrong = f"{int(good, 16) ^ 1:x}"
    rc, recs, err = run_work([str(probe)], "--kernels", "crc32,sha256", "--size", "small",
                             "--expect", f"crc32.small={wrong}")
    assert rc == 3, err
    res = results(recs)
    crc, sha = res[("crc32", "small")], res[("sha256", "small")]
    assert crc["verified"] is False and crc["checksum"] == good and crc["expected"] == wrong.rjust(16, "0")
    assert "expected" in crc["error"]
    assert sha["verified"] is True                        # the other kernel is unaffected
    warns = [r for r in recs if r["type"] == "warning"]
    assert [w["code"] for w in warns] == ["checksum_mismatch"] and "crc32.small" in warns[0]["message"]
    assert recs[-1]["type"] == "end" and recs[-1]["status"] == "error" and "crc32.small" in recs[-1]["error"]
    assert recs[0]["params"]["expect"] == {"crc32.small": wrong.rjust(16, "0")}


def test_the_right_expected_checksum_passes_and_other_seeds_rely_on_self_checks(probe, small):
    good = small["crc32"]["checksum"]
    rc, recs, _ = run_work([str(probe)], "--kernels", "crc32", "--size", "small", "--expect",
                           f"crc32.small=0x{good.upper()}")
    assert rc == 0 and results(recs)[("crc32", "small")]["verified"] is True

    rc, recs, err = run_work([str(probe)], "--kernels", "crc32,lu", "--size", "small", "--seed", "7")
    assert rc == 0, err
    res = results(recs)
    assert all(r["expected"] is None and r["verified"] is True for r in res.values())
    assert [r["code"] for r in recs if r["type"] == "warning"] == ["no_expected_checksum"]
    crc = res[("crc32", "small")]
    assert crc["checksum"] != good and int(crc["checksum"], 16) == ref_crc32(7, crc["input"])


@pytest.mark.parametrize("args", [
    ["--size", "huge"], ["--kernels", "crc32,nope"], ["--kernels", ""], ["--repetitions", "0"],
    ["--repetitions", "x"], ["--seed", "-1"], ["--expect", "crc32.small"], ["--expect", "nope.small=1"],
    ["--expect", "crc32.medium=1"], ["--expect", "crc32.small=xyz"], ["--expect", "crc32.small=12345678901234567"],
    ["--bogus"], ["extra"],
])
def test_bad_options_exit_2_with_one_clear_line(probe, args):
    rc, recs, err = run_work([str(probe)], *args)
    assert rc == 2 and recs == []
    assert err.startswith("rtvb-probe work: ") and err.count("\n") == 1, err


QEMU_USER = {"aarch64": "qemu-aarch64-static", "armhf": "qemu-arm-static", "riscv64": "qemu-riscv64-static"}


@pytest.mark.parametrize("arch", sorted(QEMU_USER))
def test_cross_built_kernels_give_the_native_checksums(cross_probes, small, arch):
    qemu = QEMU_USER[arch]
    if shutil.which(qemu) is None:
        pytest.skip(f"{qemu} is installed by make setup")
    rc, recs, err = run_work([qemu, str(cross_probes[arch])], "--size", "small", "--repetitions", "1",
                             timeout=300)
    assert rc == 0, err
    res = {k: r for (k, s), r in results(recs).items()}
    assert sorted(res) == sorted(KERNELS)
    for name, r in res.items():
        assert r["verified"] is True, (arch, name, r.get("error"))
        assert r["checksum"] == small[name]["checksum"], (arch, name)
