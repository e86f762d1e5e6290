"""Building blocks for the pydantic models that validate campaign tables.

Models are strict (TOML already has real types, so "200" for a number is a mistake
worth reporting) and forbid unknown keys (a typo must not be silently ignored).
The custom types raise errors whose message reads well after "file:line: key: ".
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainValidator
from pydantic_core import PydanticCustomError


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _positive_int(v: Any) -> int:
    if not _is_int(v) or v <= 0:
        raise PydanticCustomError("positive_int", "must be a positive integer")
    return v


def _non_negative_int(v: Any) -> int:
    if not _is_int(v) or v < 0:
        raise PydanticCustomError("non_negative_int", "must be an integer >= 0")
    return v


def _positive_number(v: Any) -> float | int:
    if not _is_number(v) or v <= 0:
        raise PydanticCustomError("positive_number", "must be a positive number")
    return v


def _number(v: Any) -> float | int:
    if not _is_number(v):
        raise PydanticCustomError("number", "must be a number")
    return v


_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def _name(v: Any) -> str:
    if not isinstance(v, str) or not _NAME.match(v):
        raise PydanticCustomError("name", "must be a name of letters, digits, '_' and '-'")
    return v


PositiveInt = Annotated[int, PlainValidator(_positive_int)]
NonNegativeInt = Annotated[int, PlainValidator(_non_negative_int)]
PositiveNumber = Annotated[float, PlainValidator(_positive_number)]
Number = Annotated[float, PlainValidator(_number)]
Name = Annotated[str, PlainValidator(_name)]


def is_valid_name(name: str) -> bool:
    """Names of environments, loads and benchmarks appear in metric names
    (`<benchmark>.<figure>`) and file names, so they must be plain words."""
    return bool(_NAME.match(name))


def number_arg(v: float | int) -> str:
    """A number as a command-line argument: 5 and 5.0 both give "5"."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))
