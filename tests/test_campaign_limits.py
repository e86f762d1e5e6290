"""Values that pass for numbers but cannot be meant: NaN and infinities, sizes of work no machine
finishes (a billion repetitions, CPUs up to 10^11, a billion guests), seeds and names the store or the
file system cannot hold. Each is a FILE:LINE: key error from `validate`, quickly and in little memory,
never an internal error or a run that fails later."""

from __future__ import annotations

import resource
import subprocess
import time

import pytest

from host_helpers import cli_argv, cli_env, run_cli
from rtvbench.analysis.metrics import known_figure
from rtvbench.campaign.reader import CampaignError, parse_campaign

GOOD = """name = "limits"
repetitions = 2
seed = 1

[environments.native]
target = "local"

[loads.idle]
[loads.cpu]
kind = "cpu"
percent = 50

[benchmarks.wakeup]
kind = "latency"
interval_us = 1000
duration_s = 1
cpus = "0"

[[requirements]]
metric = "wakeup.max_us"
max = 100
"""

CASES = [
    ("nan bound", ("max = 100", "max = nan"), "campaign.toml:21: requirements[0].max: must be a number from -1e15 to 1e15 (got NaN)"),
    ("inf duration", ("duration_s = 1", "duration_s = inf"),
     "campaign.toml:16: benchmarks.wakeup.duration_s: must be a number of seconds from 0.001 to 1e7 (got Infinity)"),
    ("nan duration", ("duration_s = 1", "duration_s = nan"),
     "campaign.toml:16: benchmarks.wakeup.duration_s: must be a number of seconds from 0.001 to 1e7 (got NaN)"),
    ("huge CPU range", ('cpus = "0"', 'cpus = "0-99999999999"'),
     'campaign.toml:17: benchmarks.wakeup.cpus: must be a list of CPU numbers or a CPU list such as "0-3,6", '
     'CPUs from 0 to 1023, ranges from low to high (got "0-99999999999")'),
    ("a billion repetitions", ("repetitions = 2", "repetitions = 1000000000"),
     "campaign.toml:2: repetitions: must be an integer from 1 to 100000 (got 1000000000)"),
    ("seed beyond 64 bits", ("seed = 1", "seed = 9223372036854775808"),
     "campaign.toml:3: seed: must be an integer from 0 to 9223372036854775807 (got 9223372036854775808)"),
    ("name too long", ('name = "limits"', f'name = "{"n" * 201}"'),
     'campaign.toml:1: name: must be at most 100 characters (got "nnnnnnnn'),
]


def _errors(text: str) -> list[str]:
    """The FILE:LINE: key lines `validate` prints for a campaign text (exit 2), validated in-process."""
    with pytest.raises(CampaignError) as e:
        parse_campaign(text, "campaign.toml", known_figure=known_figure)
    return e.value.issue_lines()


@pytest.mark.parametrize("what,edit,expected", CASES, ids=[c[0] for c in CASES])
def test_values_that_cannot_be_meant_are_campaign_errors(what, edit, expected):
    assert edit[0] in GOOD, edit[0]
    start = time.monotonic()
    lines = _errors(GOOD.replace(edit[0], edit[1], 1))
    assert any(line.startswith(expected) for line in lines), lines
    assert time.monotonic() - start < 20


def test_a_billion_guests_is_refused_before_anything_is_planned(tmp_path):
    (tmp_path / "campaign.toml").write_text(GOOD.replace(
        '[environments.native]\ntarget = "local"',
        '[environments.native]\ntarget = "local"\n[environments.vms]\ntarget = "qemu"\narch = "x86_64"\n'
        'kernel = "k"\ncount = 1000000000', 1))
    (tmp_path / "k").write_bytes(b"\0" * 16)
    r = run_cli("validate", "campaign.toml", cwd=tmp_path, env=cli_env(), timeout=60)
    assert r.returncode == 2
    assert "campaign.toml:11: environments.vms.count: must be an integer from 1 to 64 (got 1000000000)" \
        in r.stderr.splitlines(), r.stderr


def test_requirements_that_are_not_tables_are_named():
    text = GOOD.split("[[requirements]]")[0].replace("seed = 1\n", 'seed = 1\nrequirements = [1, "x"]\n')
    lines = _errors(text)
    assert "campaign.toml:4: requirements[0]: must be a table ([[requirements]] with metric or overhead) (got 1)" \
        in lines, lines
    assert 'campaign.toml:4: requirements[1]: must be a table ([[requirements]] with metric or overhead) (got "x")' \
        in lines, lines


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))      # 1 GiB of address space


def test_the_largest_plan_validates_in_little_memory_and_time(tmp_path):
    text = GOOD.replace("repetitions = 2", "repetitions = 100000")
    (tmp_path / "campaign.toml").write_text(text)
    start = time.monotonic()
    r = subprocess.run(cli_argv("validate", "campaign.toml"), cwd=tmp_path, env=cli_env(), capture_output=True,
                       text=True, timeout=120, preexec_fn=_limit_memory)
    assert r.returncode == 0, r.stderr
    assert "= 200000 measurements" in r.stdout
    assert time.monotonic() - start < 30


@pytest.mark.parametrize("metric,said", [
    ("wakeup.over_5us", '"over_5us" counts samples over 5 us, but the benchmark\'s thresholds_us are none: '
                        "add 5 to thresholds_us"),
    ("wakeup.cpu0.deadline_misses", '"cpu0.deadline_misses" exists only with a work budget: set work_us'),
])
def test_a_requirement_on_a_figure_the_benchmark_never_yields(metric, said):
    # Either would be INCONCLUSIVE forever: the probe is never asked for it.
    lines = _errors(GOOD.replace('metric = "wakeup.max_us"', f'metric = "{metric}"'))
    assert f"campaign.toml:20: requirements[0].metric: {said}" in lines, lines


def test_a_command_load_longer_than_any_argument_is_refused_quickly(tmp_path):
    text = GOOD.replace('[loads.cpu]\nkind = "cpu"\npercent = 50', f'[loads.cpu]\ncommand = "echo {"x" * (500 << 10)}"')
    (tmp_path / "campaign.toml").write_text(text)
    start = time.monotonic()
    r = run_cli("validate", "campaign.toml", cwd=tmp_path, env=cli_env(), timeout=60)
    assert r.returncode == 2
    assert any(line.startswith("campaign.toml:10: loads.cpu.command: must be at most 131,072 characters "
                               "(got 512,005)") for line in r.stderr.splitlines()), r.stderr
    assert time.monotonic() - start < 10
