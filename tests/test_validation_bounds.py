"""Every number a campaign can give has an upper bound: a value beyond it is refused by `validate` with
one sentence naming the key and the limit, before anything runs. The check over the parameter models is
generated from the models themselves, so a key added later without a bound fails here."""

from __future__ import annotations

import json
import os
import re
import types
import typing
from typing import Annotated, Any, Union

import pytest
from pydantic import BaseModel, ValidationError
from rich.console import Console

from rtvbench.benchmarks import BENCHMARKS
from rtvbench.campaign import reader
from rtvbench.cli import main
from rtvbench.errors import InputError, ProbeOutputError
from rtvbench.loads.base import LOADS
from rtvbench.params import ProbeRange
from rtvbench.probe.stream import SCHEMA, ProbeStream
from rtvbench.runner.run import Runner
from rtvbench.store import list_runs, open_store
from rtvbench.targets import TARGETS
from rtvbench.targets.local import LocalTarget

pytestmark = pytest.mark.functional

#: beyond every bound a campaign may have: more than 64 bits, so a seed's limit refuses it too
HUGE = 2**80


def _registered_models() -> dict[str, type[BaseModel]]:
    models = {f"{what} {name}": registry.get(name).Params
              for what, registry in (("benchmark", BENCHMARKS), ("load", LOADS), ("target", TARGETS))
              for name in registry.names()}
    models.update({m.__name__: m for m in (reader.TopLevel, reader.ConditionsLimits, reader.AbsoluteRequirement,
                                           reader.RelativeRequirement, reader.DeclaredComparison)})
    for name, model in list(models.items()):
        for nested in _nested_models(model):
            models.setdefault(nested.__name__, nested)
    return models


def _leaves(annotation: Any):
    """(type, metadata) of every type an annotation is made of: through Optional, unions, lists and Annotated."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        base, *meta = typing.get_args(annotation)
        for leaf, inner in _leaves(base):
            yield leaf, (*meta, *inner)
    elif origin in (Union, types.UnionType, list, tuple, dict):
        for arg in typing.get_args(annotation):
            yield from _leaves(arg)
    else:
        yield annotation, ()


def _nested_models(model: type[BaseModel]):
    for info in model.model_fields.values():
        for leaf, _ in _leaves(info.annotation):
            if isinstance(leaf, type) and issubclass(leaf, BaseModel):
                yield leaf
                yield from _nested_models(leaf)


def _numeric_fields(model: type[BaseModel]) -> list[tuple[str, bool]]:
    """(key, takes a list) of every key that holds numbers: an int or a float, or a probe range."""
    out = []
    for name, info in model.model_fields.items():
        annotation = typing.Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        leaves = list(_leaves(annotation))
        numeric = any((leaf in (int, float)) or any(isinstance(m, ProbeRange) for m in meta) for leaf, meta in leaves)
        if numeric:
            listed = any(typing.get_origin(a) in (list, tuple) for a in _unions(info.annotation)) or \
                any(leaf in (list, tuple) for leaf, _ in leaves)
            out.append((name, listed))
    return out


def _unions(annotation: Any):
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        for arg in typing.get_args(annotation):
            yield from _unions(arg)
    elif origin is Annotated:
        yield from _unions(typing.get_args(annotation)[0])
    else:
        yield annotation


MODELS = _registered_models()
FIELDS = [(label, key, listed) for label, model in MODELS.items() for key, listed in _numeric_fields(model)]


def test_the_models_hold_the_numbers_a_campaign_gives():
    """The generated check below sees the keys it must: a sample from targets, loads, benchmarks and the top."""
    keys = {(label, key) for label, key, _ in FIELDS}
    for sample in (("target qemu", "cpus"), ("target qemu", "memory_mb"), ("target labgrid", "power_off_s"),
                   ("target ssh", "port"), ("load disrupt", "every_s"), ("benchmark latency", "interval_us"),
                   ("benchmark command", "timeout_s"), ("TopLevel", "repetitions"), ("AbsoluteRequirement", "max")):
        assert sample in keys, sample


@pytest.mark.parametrize("label,key,listed", FIELDS, ids=[f"{label}.{key}" for label, key, _ in FIELDS])
def test_every_number_of_every_model_has_an_upper_bound(label, key, listed):
    value = [HUGE] if listed else HUGE
    with pytest.raises(ValidationError) as e:
        MODELS[label].model_validate({key: value}, context={"base_dir": "/"})
    about = [err for err in e.value.errors(include_url=False) if err["loc"][:1] == (key,)]
    assert about, f"{label}: {key} = {value} is accepted: give it an upper bound"
    message = about[0]["msg"]
    assert re.search(r"\d", message), f"{label}: {key}: the message does not name the limit: {message}"


# -- what the hostile campaigns gave: each refused by `rtvbench validate` with exit 2 and its key ------------

CAMPAIGN = """\
name = "hostile"

[environments.vm]
target = "qemu"
arch = "x86_64"
kernel = "bzImage"
cpus = 2
count = 2

[environments.board]
target = "labgrid"
place = "rpi4"

[loads.idle]
[loads.cpu]
kind = "cpu"
percent = 50

[benchmarks.wakeup]
kind = "latency"
interval_us = 1000
duration_s = 1
"""

CASES = [
    ("a hundred thousand vCPUs", ("cpus = 2", "cpus = 100000"),
     "environments.vm.cpus: must be an integer from 1 to 256"),
    ("a 100 KB kernel command line", ('kernel = "bzImage"', f'kernel = "bzImage"\ncmdline = "{"q" * 100_000}"'),
     "environments.vm.cmdline: is 100000 bytes, more than the 1024"),
    ("the probe's own memory as a kernel", ('kernel = "bzImage"', 'kernel = "/proc/self/mem"'),
     "environments.vm.kernel: kernel /proc/self/mem is a file of the running kernel"),
    ("a device as a kernel", ('kernel = "bzImage"', 'kernel = "/dev/zero"'),
     "environments.vm.kernel: kernel /dev/zero is a file of the running kernel"),
    ("an empty kernel", ('kernel = "bzImage"', 'kernel = "empty"'), "environments.vm.kernel: kernel /"),
    ("a board off for 2^63 s", ('place = "rpi4"', 'place = "rpi4"\npower_off_s = 9223372036854775808'),
     "environments.board.power_off_s: must be a number of seconds above 0 and at most 3600"),
    ("trace_breaches without a trace threshold", ("duration_s = 1", "duration_s = 1\ntrace_breaches = 5"),
     "benchmarks.wakeup: trace_breaches shapes the trace capture, which trace_threshold_us switches on"),
    ("a load named as an environment", ("[loads.cpu]", "[loads.vm]"),
     'loads.vm: is also the name of an environment, so "vm" in a comparison'),
    ("a load twice in one comparison", ("[benchmarks.wakeup]", '[[comparisons]]\nbaseline = "vm"\ncandidate = "board"\n'
                                        'loads = ["cpu", "cpu"]\n\n[benchmarks.wakeup]'),
     'comparisons[0].loads[1]: names load "cpu" a second time'),
    ("disrupting the measured guest", ("[loads.idle]", '[loads.idle]\n[loads.reboots]\nkind = "disrupt"\nwhere = "vm"'),
     'loads.reboots.where: environment "vm" is measured under this load too'),
]


def _validate(path, capsys) -> tuple[int, str]:
    """`rtvbench validate PATH`, in this process: its exit code and what it printed on stderr."""
    with pytest.raises(SystemExit) as e:
        main(["validate", str(path)])
    return e.value.code, capsys.readouterr().err


@pytest.mark.parametrize("what,edit,expected", CASES, ids=[c[0] for c in CASES])
def test_validate_refuses_what_run_would_refuse_or_misuse(tmp_path, capsys, what, edit, expected):
    (tmp_path / "bzImage").write_bytes(b"\0" * 4096)
    (tmp_path / "empty").write_bytes(b"")
    assert edit[0] in CAMPAIGN, edit[0]
    path = tmp_path / "campaign.toml"
    path.write_text(CAMPAIGN.replace(edit[0], edit[1], 1))
    code, err = _validate(path, capsys)
    assert code == 2, err
    lines = [line.split(": ", 1)[1] for line in err.splitlines() if line.startswith(f"{path}:")]
    assert any(line.startswith(expected) for line in lines), err
    if what == "an empty kernel":
        assert "/empty is empty; give the path of a kernel image" in err, err
    assert "internal error" not in err


def test_the_campaign_the_cases_edit_validates(tmp_path, capsys):
    (tmp_path / "bzImage").write_bytes(b"\0" * 4096)
    (tmp_path / "campaign.toml").write_text(CAMPAIGN)
    code, err = _validate(tmp_path / "campaign.toml", capsys)
    assert code == 0, err


# -- pinned CPUs: validate checks the ones this machine can tell, run refuses the others before measuring -------

PINNED = """\
name = "pinned"

[environments.here]
target = "{target}"

[loads.idle]

[benchmarks.wakeup]
kind = "latency"
interval_us = 1000
duration_s = 0.2
policy = "other"
cpus = "0-1023"
"""


def test_validate_refuses_cpus_this_machine_does_not_have(tmp_path, capsys):
    path = tmp_path / "campaign.toml"
    path.write_text(PINNED.format(target="local"))
    code, err = _validate(path, capsys)
    top = max(os.sched_getaffinity(0))
    assert code == 2, err
    assert f"benchmarks.wakeup.cpus: names CPUs {top + 1}-1023, but the probe may use only " in err, err


def test_validate_refuses_cpus_a_guest_does_not_have(tmp_path, capsys):
    (tmp_path / "bzImage").write_bytes(b"\0" * 4096)
    path = tmp_path / "campaign.toml"
    path.write_text(PINNED.format(target="qemu").replace('target = "qemu"', 'target = "qemu"\narch = "x86_64"\n'
                                                         'kernel = "bzImage"\ncpus = 2'))
    code, err = _validate(path, capsys)
    assert code == 2 and "names CPUs 2-1023, but the probe may use only CPUs 0-1 in environment here" in err


class FarTarget(LocalTarget):
    """This machine as a target that, like an ssh board, says nothing of its CPUs before it is reached."""
    kind = "test-far"

    def known_cpus(self):
        return None


@pytest.fixture
def far_target():
    TARGETS.register("test-far")(FarTarget)
    yield
    TARGETS.unregister("test-far")


def test_run_refuses_cpus_the_fingerprint_lacks_before_measuring(tmp_path, monkeypatch, probe, far_target):
    monkeypatch.setenv("RTVBENCH_PROBE", str(probe))
    campaign = reader.parse_campaign(PINNED.format(target="test-far"), "pinned.toml")     # validate cannot tell
    engine = open_store(f"sqlite:///{tmp_path}/s.db")
    with pytest.raises(InputError) as e:
        Runner(campaign, engine, Console(quiet=True)).run()
    assert e.value.exit_code == 2
    assert str(e.value).startswith("pinned.toml: benchmarks.wakeup.cpus: names CPUs ") and \
        str(e.value).endswith("; nothing was measured."), e.value
    assert list_runs(engine) == []


# -- the probe's records: a per-CPU figure names a CPU the measurement asked for ------------------------------

META = json.dumps({"type": "meta", "schema": SCHEMA, "subcommand": "latency", "params": {"cpus": [0, 1]}})


def _result(cpu) -> str:
    return json.dumps({"type": "result", "cpu": cpu, "count": 10, "min_ns": 1000, "max_ns": 2000})


@pytest.mark.parametrize("cpu,rule", [
    (5000, "line 2: `cpu` must be a CPU number below 1024"),
    (5, "line 2: a `result` for CPU 5, which the measurement did not ask for (`meta.params.cpus`: 0, 1)"),
])
def test_the_stream_refuses_a_result_for_a_cpu_never_measured(cpu, rule):
    stream = ProbeStream("probe output of native/idle/wakeup #1")
    stream.feed(META)
    with pytest.raises(ProbeOutputError) as e:
        stream.feed(_result(cpu))
    assert rule in str(e.value) and e.value.exit_code == 3, e.value
    assert stream.results == 0


def test_the_stream_takes_results_for_the_cpus_asked_for_and_the_merged_one():
    stream = ProbeStream()
    stream.feed(META)
    assert [stream.feed(_result(cpu))["cpu"] for cpu in (0, 1, "all")] == [0, 1, "all"]
    unpinned = ProbeStream()        # a measurement that lists no CPUs: only the bound applies
    unpinned.feed(json.dumps({"type": "meta", "schema": SCHEMA, "subcommand": "noise", "params": {"cpus": []}}))
    assert unpinned.feed(_result(1023))["cpu"] == 1023
    with pytest.raises(ProbeOutputError):
        unpinned.feed(_result(1024))


def test_a_round_trip_pins_its_peers_cpu_in_the_peer_so_validate_leaves_it_to_the_run(tmp_path, capsys):
    """ipc's `cpus = [this end, peer]`: the peer's CPU is the peer environment's, not every environment's."""
    path = tmp_path / "campaign.toml"
    path.write_text('name = "rtt"\n[environments.here]\ntarget = "local"\n[environments.board]\ntarget = "ssh"\n'
                    'host = "board.example"\n[benchmarks.rtt]\nkind = "ipc"\npeer = "board"\ncount = 10\n'
                    "cpus = [0, 1000]\n")
    code, err = _validate(path, capsys)
    assert code == 0, err
