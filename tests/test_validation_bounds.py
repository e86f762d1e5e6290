"""Every number a campaign can give has an upper bound: a value beyond it is refused by `validate` with
one sentence naming the key and the limit, before anything runs. The check over the parameter models is
generated from the models themselves, so a key added later without a bound fails here."""

from __future__ import annotations

import re
import types
import typing
from typing import Annotated, Any, Union

import pytest
from pydantic import BaseModel, ValidationError

from rtvbench.benchmarks import BENCHMARKS
from rtvbench.campaign import reader
from rtvbench.loads.base import LOADS
from rtvbench.params import ProbeRange
from rtvbench.targets import TARGETS

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
