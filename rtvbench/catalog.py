"""The probe's vocabulary: the names its measurement subcommands accept.

Campaign validation checks a benchmark's keys against these names, and analysis
derives and checks figure names from them, so both read them from here rather
than each keeping a copy. They follow docs/probe/{work,memory,os-ipc}.md.
"""

from __future__ import annotations

#: `work` kernels in the probe's run order, with what one operation is for each:
#: "byte" kernels also have a bandwidth, "flop" kernels a flop rate.
WORK_KERNELS: dict[str, str] = {
    "basicmath": "problem", "bitcount": "word", "qsort": "string", "dijkstra": "entry",
    "patricia": "key", "strsearch": "byte", "sha256": "byte", "crc32": "byte", "fft": "flop",
    "adpcm": "sample", "blowfish": "byte", "aes128": "byte", "aes256": "byte", "smooth": "pixel",
    "edges": "pixel", "matmul_naive": "flop", "matmul_blocked": "flop", "intmix": "iteration",
    "fpmix": "flop-ish", "lu": "flop",
}
WORK_SIZES = ("small", "large")

MEM_BW_OPS = ("read", "write", "rmw", "memcpy", "memset", "copyloop", "rand_rd", "rand_wr")
MEM_LAT_MODES = ("seq", "random")
HUGEPAGES = ("off", "thp", "hugetlb")
MEM_ALLOC_TESTS = ("alloc", "tlb")
MEM_ALLOC_METHODS = ("malloc", "mmap", "reuse")
MEM_ALLOC_TOUCH = ("page", "memset")

#: `os` tests in the probe's order, with the kind of figure each gives:
#: "time" (ns per operation) or "bandwidth" (bytes per second).
OS_TESTS: dict[str, str] = {
    "null": "time", "read": "time", "write": "time", "stat": "time", "fstat": "time",
    "open_close": "time", "select": "time", "poll": "time", "sig_install": "time",
    "sig_catch": "time", "prot_fault": "time", "fork": "time", "fork_exec": "time",
    "fork_sh": "time", "pagefault": "time", "mmap": "time", "file_create_delete": "time",
    "ctx": "time", "pipe_lat": "time", "unix_lat": "time", "udp_lat": "time", "tcp_lat": "time",
    "tcp_connect": "time", "sem_lat": "time",
    "pipe_bw": "bandwidth", "unix_bw": "bandwidth", "tcp_bw": "bandwidth",
    "file_reread": "bandwidth", "mmap_reread": "bandwidth", "proc_call": "time", "arith": "time",
}
#: the operations of the `os` test `arith`, in the probe's order
OS_ARITH_OPS = ("int_add", "int_bit", "int_mul", "int_div", "int_mod", "int64_add", "int64_bit", "int64_mul",
                "int64_div", "int64_mod", "float_add", "float_mul", "float_div", "double_add", "double_mul",
                "double_div")

IPC_TRANSPORTS = ("pipe", "unix", "udp", "tcp", "vsock", "shm")
#: what an ipc benchmark measures when `transports` is not given (shm, which spins both ends, only
#: when named)
IPC_DEFAULT_TRANSPORTS = IPC_TRANSPORTS[:5]
#: round-trip statistics of one ipc (transport, size) result, all in ns
IPC_STATS = ("min", "avg", "max", "stddev", "p50", "p90", "p99", "p999", "p9999")
