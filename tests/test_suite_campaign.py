"""Campaign validation of the measurement-suite kinds (work, mem-lat, mem-bw, mem-alloc, os, ipc):
good keys map to the probe's real options, bad keys are reported as FILE:LINE: KEY: message."""

from __future__ import annotations

import textwrap

import pytest

from rtvbench.campaign.reader import load_campaign
from rtvbench.cli import main

GOOD = """\
name = "suite"
repetitions = 3

[environments.native]
target = "local"

[benchmarks.cpu]
kind = "work"
kernels = ["crc32", "sha256"]
size = "small"
repetitions = 2
expect = { "crc32.small" = "cbf43926" }

[benchmarks.mem]
kind = "mem-lat"
sizes = ["4K", 65536, "1M-4M"]
mode = "random"
quick = true

[benchmarks.bw]
kind = "mem-bw"
operations = ["read", "memcpy"]
sizes = "16K,1M"
threads = 2
cpus = "0-1"

[benchmarks.alloc]
kind = "mem-alloc"
tests = ["alloc"]
sizes = ["2M"]
iterations = 3

[benchmarks.os]
kind = "os"
tests = ["null", "ctx", "file_create_delete"]
ctx = ["2p/0k", "8p/16k"]
file_sizes = [0, "4K"]
max_time_s = 0.05

[benchmarks.ipc]
kind = "ipc"
transports = ["pipe", "unix"]
sizes = [16, "1K"]
count = 200

[[requirements]]
metric = "mem.lat.64KiB_random"
max = 50

[[requirements]]
overhead = "os.ctx.2p_0k_us"
baseline = "native"
candidate = "native"
max_percent = 10
"""


def cli(*args: str, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    return exc.value.code, captured.out, captured.err


def write(tmp_path, text: str):
    path = tmp_path / "campaign.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_good_keys_map_to_the_probe_options(tmp_path):
    # candidate == baseline is the one error GOOD has on purpose, to check dotted metrics get that far.
    text = GOOD.replace('candidate = "native"', 'candidate = "native2"').replace(
        '[environments.native]\ntarget = "local"\n',
        '[environments.native]\ntarget = "local"\n[environments.native2]\ntarget = "local"\n')
    c = load_campaign(write(tmp_path, text))
    args = {name: b.probe_args() for name, b in c.benchmarks.items()}
    assert args["cpu"] == ["work", "--kernels", "crc32,sha256", "--size", "small", "--repetitions", "2",
                           "--seed", "1", "--expect", "crc32.small=cbf43926"]
    assert args["mem"] == ["mem-lat", "--sizes", "4096,65536,1048576-4194304", "--stride", "64", "--mode",
                           "random", "--repetitions", "1", "--hugepages", "off", "--seed", "1", "--quick"]
    assert args["bw"] == ["mem-bw", "--ops", "read,memcpy", "--sizes", "16384,1048576", "--threads", "2",
                          "--cpus", "0-1", "--hugepages", "off"]
    assert args["alloc"] == ["mem-alloc", "--tests", "alloc", "--sizes", "2097152", "--methods",
                             "malloc,mmap,reuse", "--touch", "page,memset", "--iterations", "3", "--seed", "1"]
    assert args["os"] == ["os", "--tests", "null,ctx,file_create_delete", "--ctx", "2p/0k,8p/16k",
                          "--file-sizes", "0,4096", "--max-time-s", "0.05"]
    assert args["ipc"] == ["ipc", "--transport", "pipe,unix", "--sizes", "16,1024", "--count", "200"]
    # Defaults are the probe's: "all" is passed as such, nothing else is added.
    bare = load_campaign(write(tmp_path, 'name = "d"\n[environments.n]\ntarget = "local"\n'
                                         '[benchmarks.w]\nkind = "work"\n[benchmarks.o]\nkind = "os"\n'
                                         '[benchmarks.i]\nkind = "ipc"\n'))
    assert bare.benchmarks["w"].probe_args() == ["work", "--kernels", "all", "--size", "both", "--repetitions",
                                                 "3", "--seed", "1"]
    assert bare.benchmarks["o"].probe_args() == ["os", "--tests", "all"]
    assert bare.benchmarks["i"].probe_args() == ["ipc", "--transport", "pipe,unix,udp,tcp,vsock"]
    # The progress bar's estimate follows the sweep: 2 + 5 sizes (1M-4M is 1M, 1.5M, 2M, 3M, 4M).
    assert c.benchmarks["mem"].expected_seconds() == pytest.approx(7 * 0.1)


# (what is broken, the edit to GOOD, the exact expected message line)
CASES = [
    ("unknown kernel", ('kernels = ["crc32", "sha256"]', 'kernels = ["crc32", "sha512"]'),
     'campaign.toml:9: benchmarks.cpu.kernels: unknown kernel "sha512" (known: basicmath, bitcount, qsort, '
     'dijkstra, patricia, strsearch, sha256, crc32, fft, adpcm, blowfish, aes128, aes256, smooth, edges, '
     'matmul_naive, matmul_blocked, intmix, fpmix, lu) (got ["crc32", "sha512"])'),
    ("work size", ('size = "small"', 'size = "medium"'),
     'campaign.toml:10: benchmarks.cpu.size: must be one of "small", "large" or "both" (got "medium")'),
    ("expected checksum that is not hex", ('"cbf43926"', '"xyz"'),
     'campaign.toml:12: benchmarks.cpu.expect: "crc32.small" must be a checksum of 1 to 16 hex digits, '
     'e.g. "cbf43926"'),
    ("expected checksum of a kernel that does not exist", ('"crc32.small" =', '"crc33.small" ='),
     'campaign.toml:12: benchmarks.cpu.expect: key "crc33.small" must be "<kernel>.<small|large>", '
     'e.g. "crc32.small"'),
    ("size with a decimal suffix", ('sizes = ["4K", 65536, "1M-4M"]', 'sizes = ["4KB", 65536, "1M-4M"]'),
     "campaign.toml:16: benchmarks.mem.sizes: '4KB': must be a size in bytes: an integer or a string such as "
     '"4K", "64M", "1.5M" or "64MiB" (got ["4KB", 65536, "1M-4M"])'),
    ("backward sweep", ('"1M-4M"', '"4M-1M"'),
     "campaign.toml:16: benchmarks.mem.sizes: '4M-1M': range \"4M-1M\" must go from the smaller size to "
     'the larger (got ["4K", 65536, "4M-1M"])'),
    ("latency set smaller than two slots", ('quick = true\n\n[benchmarks.bw]', 'quick = true\nstride = 4096\n\n[benchmarks.bw]'),
     "campaign.toml:14: benchmarks.mem: every size must hold at least two slots of stride 4096 B "
     "(size 4096 is too small)"),
    ("stride that is not a pointer multiple", ('quick = true\n\n[benchmarks.bw]', 'quick = true\nstride = 12\n\n[benchmarks.bw]'),
     "campaign.toml:19: benchmarks.mem.stride: must be a multiple of 8 bytes (the pointer size) "
     "(got 12)"),
    ("bandwidth operation", ('operations = ["read", "memcpy"]', 'operations = ["read", "copy"]'),
     'campaign.toml:22: benchmarks.bw.operations: unknown operation "copy" (known: read, write, rmw, memcpy, '
     'memset, copyloop, rand_rd, rand_wr) (got ["read", "copy"])'),
    ("the probe's option name instead of the campaign key", ('operations = ["read", "memcpy"]', 'ops = ["read"]'),
     'campaign.toml:22: benchmarks.bw.ops: unknown key; allowed: cpus, hugepages, kind, operations, quick, '
     'sizes, threads'),
    ("bandwidth buffer below 1K", ('sizes = "16K,1M"', 'sizes = "16K,1000"'),
     'campaign.toml:23: benchmarks.bw.sizes: every size must be from 1K to 16G (1000 is not) (got "16K,1000")'),
    ("bandwidth buffer not a multiple of 64", ('sizes = "16K,1M"', 'sizes = "16K,1100"'),
     "campaign.toml:20: benchmarks.bw: sizes must be multiples of 64 bytes (size 1100 is not)"),
    ("os test", ('tests = ["null", "ctx", "file_create_delete"]', 'tests = ["null", "ctxsw"]'),
     'campaign.toml:35: benchmarks.os.tests: unknown test "ctxsw" (known: null, read, write, stat, fstat, '
     'open_close, select, poll, sig_install, sig_catch, prot_fault, fork, fork_exec, fork_sh, pagefault, mmap, '
     'file_create_delete, ctx, pipe_lat, unix_lat, udp_lat, tcp_lat, tcp_connect, sem_lat, pipe_bw, unix_bw, '
     'tcp_bw, file_reread, mmap_reread, proc_call, arith) (got ["null", "ctxsw"])'),
    ("context-switch ring", ('ctx = ["2p/0k", "8p/16k"]', 'ctx = ["2p/0k", "1p/16k"]'),
     'campaign.toml:36: benchmarks.os.ctx: "1p/16k" must be <processes>p/<KiB>k with 2 to 64 processes of at most '
     '65536k, '
     'e.g. "2p/0k" (got ["2p/0k", "1p/16k"])'),
    ("sweep where the probe takes a list", ('file_sizes = [0, "4K"]', 'file_sizes = ["0-4K"]'),
     "campaign.toml:37: benchmarks.os.file_sizes: '0-4096': a sweep is not allowed here; list the sizes "
     '(got ["0-4K"])'),
    ("ipc peer not an environment", ('transports = ["pipe", "unix"]', 'transports = ["tcp"]\npeer = "guest"'),
     'campaign.toml:43: benchmarks.ipc.peer: environment "guest" is not defined (defined: "native"); '
     "name the environment the round trips' server runs in"),
    ("ipc peer over a local-only transport", ('count = 200', 'count = 200\npeer = "native"'),
     'campaign.toml:42: benchmarks.ipc.transports: transport "pipe" does not cross between environments; '
     'with a peer use ["tcp"], ["udp"] or ["shm"] (got ["pipe", "unix"])'),
    ("ipc both limits", ('count = 200', 'count = 200\nduration_s = 1'),
     "campaign.toml:40: benchmarks.ipc: set count or duration_s, not both"),
    ("ipc message too small", ('sizes = [16, "1K"]', 'sizes = [8, "1K"]'),
     'campaign.toml:43: benchmarks.ipc.sizes: every size must be from 16 to 16M (8 is not) (got [8, "1K"])'),
    ("figure that is not canonical", ('metric = "mem.lat.64KiB_random"', 'metric = "mem.lat.65536B_random"'),
     'campaign.toml:47: requirements[0].metric: "lat.65536B_random" is not a figure of a mem-lat benchmark '
     "(see the metrics reference in docs/)"),
    ("figure of another kind", ('overhead = "os.ctx.2p_0k_us"', 'overhead = "os.ctx_2p_0k_us"'),
     'campaign.toml:51: requirements[1].overhead: "ctx_2p_0k_us" is not a figure of a os benchmark '
     "(see the metrics reference in docs/)"),
]


@pytest.mark.parametrize("what,edit,expected", CASES, ids=[c[0] for c in CASES])
def test_bad_keys_name_file_line_and_key(tmp_path, capsys, monkeypatch, what, edit, expected):
    assert edit[0] in GOOD, edit[0]
    monkeypatch.chdir(tmp_path)
    write(tmp_path, GOOD.replace(edit[0], edit[1]))
    code, _, err = cli("validate", "campaign.toml", capsys=capsys)
    assert code == 2
    lines = err.splitlines()
    # GOOD compares `native` with itself on purpose: that line is always there, the edit's line too.
    assert expected in lines, err
    assert "Traceback" not in err
    assert len(lines) == 3, err


def test_only_the_deliberate_error_in_good(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, GOOD)
    code, _, err = cli("validate", "campaign.toml", capsys=capsys)
    assert code == 2
    assert err.splitlines()[0] == "campaign.toml:53: requirements[1].candidate: must be another environment than baseline"


def test_example_campaign_is_valid():
    from pathlib import Path
    c = load_campaign(Path(__file__).resolve().parent.parent / "examples" / "measurement-suite.toml")
    assert {b.kind for b in c.benchmarks.values()} == {"work", "mem-lat", "mem-bw", "mem-alloc", "os", "ipc"}
    assert c.requirements[0]["metric"] == "mem.lat.4KiB_random"
