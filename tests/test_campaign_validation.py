"""Campaign validation: every problem is reported as FILE:LINE: KEY: message, all at
once, with exit code 2; a good campaign validates with exit code 0."""

from __future__ import annotations

import textwrap

import pytest

from rtvbench.benchmarks import BENCHMARKS
from rtvbench.campaign.reader import default_campaign_path, load_campaign
from rtvbench.cli import main
from rtvbench.campaign.plan import plan

GOOD = """\
name = "good"
repetitions = 2
seed = 3

[environments.native]
target = "local"

[loads.idle]
[loads.stress]
command = "stress-ng --cpu 1 --quiet"

[benchmarks.wakeup]
kind = "latency"
interval_us = 200
duration_s = 1
cpus = "0"

[[requirements]]
metric = "wakeup.max_us"
max = 100

[[requirements]]
metric = "wakeup.p99_us"
environments = ["native"]
loads = ["stress"]
max = 50
"""


def cli(*args: str, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    captured = capsys.readouterr()
    return exc.value.code, captured.out, captured.err


def write(tmp_path, text: str, name: str = "campaign.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def replace_line(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


# (what is broken, the edit to GOOD, the exact expected message line)
CASES = [
    ("wrong type", ('interval_us = 200', 'interval_us = "fast"'),
     'campaign.toml:14: benchmarks.wakeup.interval_us: must be an integer from 1 to 3600000000 (got "fast")'),
    ("negative number", ("repetitions = 2", "repetitions = -1"),
     "campaign.toml:2: repetitions: must be an integer from 1 to 100000 (got -1)"),
    ("unknown key with a close match", ("duration_s = 1", "duration_sec = 1"),
     'campaign.toml:15: benchmarks.wakeup.duration_sec: unknown key; did you mean "duration_s"?'),
    ("unknown top-level key", ("seed = 3", "seed = 3\ncolour = 3"),
     'campaign.toml:4: colour: unknown key; allowed: benchmarks, comparisons, conditions, environments, '
     'equivalence_percent, jobs, loads, name, repetitions, requirements, seed'),
    ("literal", ('cpus = "0"', 'cpus = "0"\npolicy = "deadline"'),
     'campaign.toml:17: benchmarks.wakeup.policy: must be one of "fifo", "rr" or "other" (got "deadline")'),
    ("model-level rule, reported on the table", ("duration_s = 1\n", ""),
     "campaign.toml:12: benchmarks.wakeup: needs duration_s (seconds) or loops (activations per CPU) "
     "so that it ends"),
    ("labgrid place missing", ('target = "local"', 'target = "labgrid"'),
     'campaign.toml:5: environments.native.place: is required'),
    ("labgrid coordinator", ('target = "local"', 'target = "labgrid"\nplace = "rpi4"\ncoordinator = "lab:0"'),
     'campaign.toml:8: environments.native.coordinator: must be HOST or HOST:PORT of the labgrid '
     'coordinator, e.g. "lab:20408" (got "lab:0")'),
    ("labgrid ssh option", ('target = "local"', 'target = "labgrid"\nplace = "rpi4"\noptions = ["BatchMode=no"]'),
     'campaign.toml:8: environments.native.options: "BatchMode=no": rtvbench sets BatchMode itself '
     '(connection sharing, never prompting); remove it (got ["BatchMode=no"])'),
    ("unknown target", ('target = "local"', 'target = "moon"'),
     'campaign.toml:6: environments.native.target: unknown target "moon" (supported: "labgrid", "local", '
     '"qemu", "ssh")'),
    ("unknown load kind", ("[loads.idle]", '[loads.idle]\nkind = "cpuu"'),
     'campaign.toml:9: loads.idle.kind: unknown load kind "cpuu" (supported: "cache", "combine", "command", '
     '"cpu", "disrupt", "fork", "idle", "io", "leak", "mem", "net", "sched", "timer")'),
    ("unknown benchmark kind", ('kind = "latency"', 'kind = "oss"'),
     'campaign.toml:13: benchmarks.wakeup.kind: unknown benchmark kind "oss" '
     f'(supported: {", ".join(chr(34) + n + chr(34) for n in BENCHMARKS.names())})'),
    ("missing program of a command load", ('command = "stress-ng', 'command = "stress-ngx'),
     'campaign.toml:10: loads.stress.command: program "stress-ngx" is not found on PATH: '
     "install it or fix the command"),
    ("undefined benchmark in a metric", ('metric = "wakeup.max_us"', 'metric = "wakeupp.max_us"'),
     'campaign.toml:19: requirements[0].metric: benchmark "wakeupp" is not defined (defined: "wakeup")'),
    ("undefined load in the second [[requirements]]", ('loads = ["stress"]', 'loads = ["stress", "io"]'),
     'campaign.toml:25: requirements[1].loads[1]: load "io" is not defined (defined: "idle", "stress")'),
    ("undefined environment", ('environments = ["native"]', 'environments = ["guest"]'),
     'campaign.toml:24: requirements[1].environments[0]: environment "guest" is not defined '
     '(defined: "native")'),
    ("relative requirement with an undefined baseline",
     ('metric = "wakeup.max_us"\nmax = 100\n',
      'overhead = "wakeup.p99_us"\nbaseline = "vanilla"\ncandidate = "native"\nmax_percent = 10\n'),
     'campaign.toml:20: requirements[0].baseline: environment "vanilla" is not defined (defined: "native")'),
    ("figure the benchmark kind does not yield", ('metric = "wakeup.max_us"', 'metric = "wakeup.maxx_us"'),
     'campaign.toml:19: requirements[0].metric: "maxx_us" is not a figure of a latency benchmark '
     "(see the metrics reference in docs/)"),
    ("load in an undefined neighbouring environment", ('--quiet"', '--quiet"\nwhere = "guest"'),
     'campaign.toml:11: loads.stress.where: environment "guest" is not defined (defined: "native"); '
     'name one of them, "same" for the environment measured, or "neighbours" for the other guests of a qemu environment with count > 1'),
    ("environment name longer than the store keeps",
     ('target = "local"', f'target = "local"\n[environments.{"n" * 101}]\ntarget = "local"'),
     f"campaign.toml:7: environments.{'n' * 101}: names may be at most 100 characters long"),
    ("TOML syntax error", ('name = "good"', "name = good"),
     "campaign.toml:1: invalid TOML at column 8: Invalid value"),
]


@pytest.mark.parametrize("what,edit,expected", CASES, ids=[c[0] for c in CASES])
def test_broken_campaign_names_file_line_and_key(tmp_path, capsys, monkeypatch, what, edit, expected):
    text = replace_line(GOOD, *edit)
    monkeypatch.chdir(tmp_path)
    write(tmp_path, text)
    code, out, err = cli("validate", "campaign.toml", capsys=capsys)
    assert code == 2
    assert expected in err.splitlines(), err
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith("rtvbench: 1 problem in campaign.toml; nothing was run.")


def test_all_errors_are_reported_at_once_in_line_order(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, """\
        name = "many"
        repetitions = 0

        [environments.native]
        target = "local"
        cpus = 2

        [benchmarks.wakeup]
        kind = "latency"
        interval_us = 0
        duration_s = 1
        thresholds_us = [100, "x"]

        [[requirements]]
        metric = "wakeup.max_us"
        max = 1
        [[requirements]]
        metric = "other.max_us"
        max = 1
        """)
    code, _, err = cli("validate", "campaign.toml", capsys=capsys)
    assert code == 2
    assert err.splitlines() == [
        "campaign.toml:2: repetitions: must be an integer from 1 to 100000 (got 0)",
        "campaign.toml:6: environments.native.cpus: unknown key; allowed: target",
        "campaign.toml:10: benchmarks.wakeup.interval_us: must be an integer from 1 to 3600000000 (got 0)",
        'campaign.toml:12: benchmarks.wakeup.thresholds_us[1]: must be a number of microseconds from 0.001 to 3.6e9 (got "x")',
        'campaign.toml:18: requirements[1].metric: benchmark "other" is not defined (defined: "wakeup")',
        "rtvbench: 5 problems in campaign.toml; nothing was run. Fix them and check again with "
        "`rtvbench validate`.",
    ]


def test_dotted_and_inline_keys_are_located(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, """\
        name = "dotted"
        environments.native = { target = "local", colour = "red" }

        [benchmarks]
        wakeup.kind = "latency"
        wakeup.duration_s = 1
        wakeup.interval_us = "fast"
        """)
    code, _, err = cli("validate", "campaign.toml", capsys=capsys)
    assert code == 2
    lines = err.splitlines()
    assert "campaign.toml:2: environments.native.colour: unknown key; allowed: target" in lines
    assert 'campaign.toml:7: benchmarks.wakeup.interval_us: must be an integer from 1 to 3600000000 (got "fast")' in lines


def test_missing_sections_and_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, 'name = "empty"\n')
    code, _, err = cli("validate", "campaign.toml", capsys=capsys)
    assert code == 2
    assert err.splitlines()[:2] == [
        "campaign.toml: benchmarks: is required: add at least one [benchmarks.NAME] table",
        "campaign.toml: environments: is required: add at least one [environments.NAME] table",
    ]
    code, _, err = cli("validate", "nowhere.toml", capsys=capsys)
    assert (code, err.strip()) == (2, "rtvbench: nowhere.toml: no such campaign file; check the path.")
    code, _, err = cli("validate", capsys=capsys)          # Click usage error
    assert code == 2 and "Missing argument 'CAMPAIGN'" in err


def test_good_campaign_validates(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, GOOD)
    code, out, err = cli("validate", "campaign.toml", capsys=capsys)
    assert (code, err) == (0, "")
    assert "campaign.toml is valid: 1 environment(s) x 2 load(s) x 1 benchmark(s) x 2 repetition(s) " \
           "= 4 measurements" in out
    c = load_campaign(tmp_path / "campaign.toml")
    assert c.benchmarks["wakeup"].probe_args() == [
        "latency", "--interval-us", "200", "--duration-s", "1", "--policy", "fifo", "--priority", "80", "--cpus", "0",
        "--mode", "abstime"]
    assert c.loads["stress"].commands() == ["stress-ng --cpu 1 --quiet"]
    assert len(plan(c)) == 4


def test_default_campaign_is_valid_and_short():
    c = load_campaign(None)
    assert default_campaign_path().is_file()
    assert set(c.loads) == {"idle", "cpu", "memory"}
    assert c.measurement_count == 15
    seconds = sum(c.benchmarks[p.benchmark].expected_seconds() + 1 for p in plan(c))
    assert seconds < 120            # well under the 3 minutes of the README's main job
