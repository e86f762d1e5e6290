"""Campaign keys of the probe's loads: probe load kinds, `combine`, `where`, the latency `work_us` —
every mistake reported as FILE:LINE: KEY: message, and good keys mapped to the exact probe
command line. Also: `where` starts the load through the target of the environment it names."""

from __future__ import annotations

import textwrap

import pytest

from rtvbench.analysis.metrics import known_figure
from rtvbench.campaign.reader import CampaignError, parse_campaign
from rtvbench.loads.base import LoadContext, LoadSite
from rtvbench.targets.base import Background, Completed, Target

GOOD = """\
name = "loads"
repetitions = 1

[environments.native]
target = "local"

[environments.neighbour]
target = "local"

[loads.idle]

[loads.cpu50]
kind = "cpu"
percent = 50
workers = 2
period_ms = 10
method = "matrix"
cpus = [0, 1]
policy = "fifo"
priority = 90

[loads.mem]
kind = "mem"
buffer_size = "32M"
op = "read"
bps_limit = "1G"

[loads.cache]
kind = "cache"
buffer_size = "auto"
cpus = "1"

[loads.io]
kind = "io"
dir = "/tmp"
file_size = "1M"
block_size = "64K"
fsync = false
drop_cache = true

[loads.forks]
kind = "fork"
rate = 500
nice = 5

[loads.leak]
kind = "leak"
rate_mbps = 32.5
limit = "64M"

[loads.timer]
kind = "timer"
rate_hz = 2000
workers = 2
policy = "batch"

[loads.net]
kind = "net"
bps_limit = "100M"
block_size = "16K"
where = "neighbour"
settle_s = 0.5
window_s = 0

[loads.both]
combine = ["cpu50", "io"]

[benchmarks.victim]
kind = "latency"
interval_us = 1000
work_us = 200
duration_s = 1
cpus = [0]

[[requirements]]
metric = "victim.response_p999_us"
max = 900

[[requirements]]
metric = "victim.deadline_misses"
loads = ["both"]
max = 0
"""

PROBE_ARGS = {
    "cpu50": "load --kind cpu --workers 2 --cpus 0,1 --policy fifo --priority 90 --window-s 0.5 --percent 50 "
             "--period-ms 10 --method matrix",
    "mem": "load --kind mem --window-s 0.5 --buffer-size 33554432 --op read --bps-limit 1073741824",
    "cache": "load --kind cache --cpus 1 --window-s 0.5 --buffer-size auto",
    "io": "load --kind io --window-s 0.5 --dir /tmp --file-size 1048576 --block-size 65536 --no-fsync --drop-cache",
    "forks": "load --kind fork --nice 5 --window-s 0.5 --rate 500",
    "leak": "load --kind leak --window-s 0.5 --rate-mbps 32.5 --limit 67108864",
    "timer": "load --kind timer --workers 2 --policy batch --window-s 0.5 --rate-hz 2000",
    "net": "load --kind net --window-s 0 --bps-limit 104857600 --block-size 16384",
}


def test_every_probe_kind_maps_to_its_probe_command_line():
    c = parse_campaign(GOOD, "loads.toml")
    for name, args in PROBE_ARGS.items():
        assert c.loads[name].commands() == [f"rtvb-probe {args}"], name
    both = c.loads["both"]
    assert [p.name for p in both.parts] == ["cpu50", "io"]
    assert both.commands() == [f"rtvb-probe {PROBE_ARGS['cpu50']}", f"rtvb-probe {PROBE_ARGS['io']}"]
    assert both.settle_s == 0.0 and c.loads["net"].settle_s == 0.5
    assert c.loads["net"].where == "neighbour" and c.loads["cpu50"].where == "same"
    assert c.benchmarks["victim"].probe_args()[-2:] == ["--work-us", "200"]
    assert c.measurement_count == 2 * 10


# (what is broken, the edit to GOOD, the exact expected message line)
CASES = [
    ("option of another kind", 'buffer_size = "1M"', ("percent = 50\n", "percent = 50\nbuffer_size = \"1M\"\n"),
     '{L}: loads.cpu50.buffer_size: unknown key; allowed: busy_clock, cpus, kind, method, nice, '
     'percent, period_ms, policy, priority, settle_s, where, window_s, workers'),
    ("duty cycle out of range", 'percent = 150', ("percent = 50", "percent = 150"),
     "{L}: loads.cpu50.percent: must be a duty cycle in percent from 0 to 100 (got 150)"),
    ("real-time policy without priority", '[loads.cpu50]', ("priority = 90\n", ""),
     '{L}: loads.cpu50: policy "fifo" needs priority from 1 to 99'),
    ("priority with SCHED_OTHER", '[loads.forks]', ("nice = 5", "priority = 5"),
     "{L}: loads.forks: priority applies to policy \"fifo\" or \"rr\" (this load's policy is "
     "\"other\"); use nice for \"other\" and \"batch\""),
    ("nice out of range", 'nice = 25', ("nice = 5", "nice = 25"),
     "{L}: loads.forks.nice: must be an integer from -20 to 19 (got 25)"),
    ("leak with two workers", '[loads.leak]', ('limit = "64M"', 'limit = "64M"\nworkers = 2'),
     "{L}: loads.leak: a leak load runs one worker; drop workers or use 1"),
    ("size below the probe's minimum", 'limit = "512K"', ('limit = "64M"', 'limit = "512K"'),
     '{L}: loads.leak.limit: must be a size from 1M to 16G (got "512K")'),
    ("not a size", 'buffer_size = "lots"', ('buffer_size = "32M"', 'buffer_size = "lots"'),
     '{L}: loads.mem.buffer_size: must be a size in bytes: an integer or a string such as "4K", '
     '"64M", "1.5M" or "64MiB" (got "lots")'),
    ("io block larger than the file", '[loads.io]', ('block_size = "64K"', 'block_size = "2M"'),
     "{L}: loads.io: block_size (2M) must not exceed file_size (1M)"),
    ("window too short", 'window_s = 0.001', ("window_s = 0\n", "window_s = 0.001\n"),
     "{L}: loads.net.window_s: must be 0 or a number of seconds from 0.01 to 1e6 (got 0.001)"),
    ("combine of an undefined load", 'combine = ["cpu50", "disk"]', ('combine = ["cpu50", "io"]', 'combine = ["cpu50", "disk"]'),
     '{L}: loads.both.combine[1]: load "disk" is not defined (defined: "idle", "cpu50", "mem", '
     '"cache", "io", "forks", "leak", "timer", "net", "both")'),
    ("combine of itself", 'combine = ["cpu50", "both"]', ('combine = ["cpu50", "io"]', 'combine = ["cpu50", "both"]'),
     '{L}: loads.both.combine[1]: load "both" cannot include itself'),
    ("nested combine", 'combine = ["both"]', ('combine = ["cpu50", "io"]\n', 'combine = ["cpu50", "io"]\n[loads.more]\ncombine = ["both"]\n'),
     '{L}: loads.more.combine[0]: load "both" is itself a combination; list its loads here instead '
     "(combinations do not nest)"),
    ("combine names a load twice", 'combine = ["io", "io"]', ('combine = ["cpu50", "io"]', 'combine = ["io", "io"]'),
     '{L}: loads.both.combine: names "io" more than once (got ["io", "io"])'),
    ("empty combine", 'combine = []', ('combine = ["cpu50", "io"]', "combine = []"),
     '{L}: loads.both.combine: must name at least one load, e.g. combine = ["cpu50", "io"] (got [])'),
    ("combine with a key of its parts", 'percent = 5', ('combine = ["cpu50", "io"]', 'combine = ["cpu50", "io"]\npercent = 5'),
     '{L}: loads.both.percent: unknown key; allowed: combine, kind'),
    ("where names no environment", 'where = "guest"', ('where = "neighbour"', 'where = "guest"'),
     '{L}: loads.net.where: environment "guest" is not defined (defined: "native", "neighbour"); '
     'name one of them, "same" for the environment measured, or "neighbours" for the other guests of a qemu environment with count > 1'),
    ("work budget of a whole period", '[benchmarks.victim]', ("work_us = 200", "work_us = 1000"),
     "{L}: benchmarks.victim: work_us (1000) must be shorter than interval_us (1000): a work budget "
     "of a whole period or more misses every deadline"),
    ("response figure misspelled", 'metric = "victim.respons_p999_us"', ('metric = "victim.response_p999_us"', 'metric = "victim.respons_p999_us"'),
     '{L}: requirements[0].metric: "respons_p999_us" is not a figure of a latency benchmark '
     "(see the metrics reference in docs/)"),
]


@pytest.mark.parametrize("what,anchor,edit,expected", CASES, ids=[c[0] for c in CASES])
def test_bad_load_keys_name_file_line_and_key(what, anchor, edit, expected):
    old, new = edit
    assert old in GOOD, old
    text = GOOD.replace(old, new, 1)
    line = next(i for i, x in enumerate(text.splitlines(), start=1) if x.strip() == anchor)
    with pytest.raises(CampaignError) as exc:
        parse_campaign(text, "loads.toml", known_figure=known_figure)
    expected = expected.replace("{L}", f"loads.toml:{line}")
    assert expected in exc.value.issue_lines(), "\n".join(exc.value.issue_lines())
    assert len(exc.value.issue_lines()) == 1, exc.value.issue_lines()


def test_where_starts_the_load_through_the_named_environments_target():
    """A neighbour load is started by the target of the environment `where` names (today another
    local environment, later an ssh or qemu guest), with the probe deployed there."""
    c = parse_campaign(textwrap.dedent(GOOD), "loads.toml")

    class Recorder(Target):
        kind = "fake"
        Params = None

        def __init__(self, name):
            super().__init__(name, None)
            self.started: list[list[str]] = []

        def start_background(self, argv, on_line=None, *, alone=False):
            self.started.append(argv)
            raise RuntimeError("recorded")          # stop right there: the call is what is tested

        deploy_probe = describe = lambda self: None     # noqa: E731

        def run(self, argv, on_line, deadline=None) -> Completed:
            return Completed(0, "")

    sites = {name: LoadSite(name, Recorder(name), f"/opt/{name}/rtvb-probe") for name in ("native", "neighbour")}
    ctx = LoadContext("native", sites)
    for load in ("net", "cpu50"):
        with pytest.raises(RuntimeError, match="recorded"):
            c.loads[load].start(ctx)
    assert sites["neighbour"].target.started == [["/opt/neighbour/rtvb-probe", *PROBE_ARGS["net"].split()]]
    assert sites["native"].target.started == [["/opt/native/rtvb-probe", *PROBE_ARGS["cpu50"].split()]]
    assert isinstance(sites["native"].target, Target) and not isinstance(sites["native"].target, Background)
