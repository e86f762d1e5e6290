"""Load and validate a campaign file (DESIGN.md, "Campaign file (v1)").

Validation happens before anything runs and reports every problem at once, each
as `FILE:LINE: KEY: message`. The file's shape is checked here; what the keys of
an environment, a load or a benchmark mean is checked by the pydantic model of its
kind (rtvbench.targets / loads / benchmarks), so that adding a kind is one module.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Optional

from pydantic import ValidationError, model_validator

from rtvbench.benchmarks import BENCHMARKS, Benchmark
from rtvbench.errors import InputError
from rtvbench.loads import LOADS, Load, kind_of
from rtvbench.loads.base import NEIGHBOURS
from rtvbench.loads.combine import CombinedLoad
from rtvbench.params import (Name, NonNegativeInt, Number, PositiveInt, StrictModel,
                             is_valid_name)
from rtvbench.targets import TARGETS, Target
from rtvbench.tomlloc import TomlLocator, format_path

if sys.version_info >= (3, 11):
    import tomllib
else:                                   # pragma: no cover
    import tomli as tomllib


def default_campaign_path() -> Path:
    """The built-in campaign "evaluate this machine" (package data)."""
    return Path(str(resources.files("rtvbench") / "campaigns" / "default.toml"))


# ---------------------------------------------------------------------------
# Errors


@dataclass(frozen=True)
class Issue:
    path: tuple                 # key path, e.g. ("benchmarks", "wakeup", "interval_us")
    message: str
    line: int | None = None


class CampaignError(InputError):
    """Everything wrong with one campaign file, one `file:line: key: message` per line."""

    def __init__(self, filename: str, issues: list[Issue]) -> None:
        self.filename = filename
        self.issues = sorted(issues, key=lambda i: (i.line or 0, format_path(i.path)))
        super().__init__("\n".join(self.issue_lines()))

    def issue_lines(self) -> list[str]:
        out = []
        for i in self.issues:
            where = f"{self.filename}:{i.line}" if i.line else self.filename
            key = f" {format_path(i.path)}:" if i.path else ""
            out.append(f"{where}:{key} {i.message}")
        return out

    def lines(self) -> list[str]:
        n = len(self.issues)
        return self.issue_lines() + [
            f"rtvbench: {n} problem{'s' if n > 1 else ''} in {self.filename}; nothing was run. "
            f"Fix {'them' if n > 1 else 'it'} and check again with `rtvbench validate`."]


# ---------------------------------------------------------------------------
# Models of the parts that are not a registered kind


class TopLevel(StrictModel):
    name: Name
    repetitions: PositiveInt = 1
    seed: NonNegativeInt = 0
    # Checked entry by entry below, against the model of each entry's kind.
    environments: Optional[dict[str, Any]] = None      # required: reported by _table_of_tables
    loads: dict[str, Any] = {"idle": {}}
    benchmarks: Optional[dict[str, Any]] = None
    requirements: list[Any] = []


class AbsoluteRequirement(StrictModel):
    metric: str
    environments: Optional[list[str]] = None
    loads: Optional[list[str]] = None
    max: Optional[Number] = None
    min: Optional[Number] = None

    @model_validator(mode="after")
    def _bounded(self):
        if self.max is None and self.min is None:
            raise ValueError("needs a bound: max, min or both")
        if self.max is not None and self.min is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max})")
        return self


class RelativeRequirement(StrictModel):
    overhead: str
    baseline: str               # environment names
    candidate: str
    loads: Optional[list[str]] = None
    max_percent: Number


# ---------------------------------------------------------------------------
# The validated campaign


@dataclass
class Campaign:
    filename: str               # as the user named it, for messages
    text: str                   # the file as it was read: stored with every run
    data: dict[str, Any]        # the parsed TOML
    name: str
    repetitions: int
    seed: int
    environments: dict[str, Target]
    loads: dict[str, Load]
    benchmarks: dict[str, Benchmark]
    requirements: list[dict[str, Any]] = field(default_factory=list)

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def measurement_count(self) -> int:
        return len(self.environments) * len(self.loads) * len(self.benchmarks) * self.repetitions


def load_campaign(path: str | Path | None) -> Campaign:
    """Read and validate a campaign file (None: the built-in default campaign)."""
    if path is None:
        path = default_campaign_path()
        filename = "default campaign (" + str(path) + ")"
    else:
        filename = str(path)
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{filename}: no such campaign file; check the path.") from None
    except IsADirectoryError:
        raise InputError(f"{filename} is a directory, not a campaign file; name the .toml file.") from None
    except UnicodeDecodeError:
        raise InputError(f"{filename} is not UTF-8 text; save the campaign file as UTF-8.") from None
    except OSError as e:
        raise InputError(f"{filename}: cannot read it ({e.strerror}); check its permissions.") from None
    return parse_campaign(text, filename, path.resolve().parent)


_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def parse_campaign(text: str, filename: str = "<campaign>", base_dir: Path | None = None) -> Campaign:
    """Validate campaign text; relative paths in it (a kernel image, an ssh config) are taken
    from base_dir, the campaign file's directory (default: the working directory)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_POS.search(msg)
        if m:
            msg = _TOML_POS.sub("", msg)
            raise CampaignError(filename, [Issue((), f"invalid TOML at column {m.group(2)}: {msg}",
                                                 int(m.group(1)))]) from None
        raise CampaignError(filename, [Issue((), f"invalid TOML: {msg}")]) from None
    return _Validator(text, filename, data, base_dir or Path.cwd()).campaign()


# ---------------------------------------------------------------------------


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


class _Validator:
    """Collects every issue of one parsed file, then builds the Campaign or raises."""

    def __init__(self, text: str, filename: str, data: dict[str, Any], base_dir: Path) -> None:
        self.text, self.filename, self.data = text, filename, data
        self.base_dir = base_dir
        self.issues: list[Issue] = []

    def add(self, path: tuple, message: str) -> None:
        self.issues.append(Issue(tuple(path), message))

    def model(self, model: type[StrictModel], data: Any, prefix: tuple,
              extra_allowed: tuple[str, ...] = ()) -> StrictModel | None:
        """Validate data against model; on errors record them under prefix."""
        try:
            # Validators that resolve a relative path read it from the context (`base_dir`).
            return model.model_validate(data, context={"base_dir": self.base_dir})
        except ValidationError as exc:
            for e in exc.errors(include_url=False):
                self._pydantic_issue(e, model, prefix, extra_allowed)
            return None

    def _pydantic_issue(self, e: dict, model: type[StrictModel], prefix: tuple,
                        extra_allowed: tuple[str, ...]) -> None:
        loc, etype = tuple(e["loc"]), e["type"]
        if etype == "extra_forbidden":
            allowed = sorted(set(model.model_fields) | set(extra_allowed))
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            hint = f'did you mean "{close[0]}"?' if close else "allowed: " + ", ".join(allowed)
            self.add(prefix + loc, f"unknown key; {hint}")
            return
        if etype == "missing":
            self.add(prefix + loc, "is required")
            return
        messages = {"dict_type": "must be a table", "list_type": "must be a list",
                    "string_type": "must be a string", "bool_type": "must be true or false"}
        if etype in messages:
            msg = messages[etype]
        elif etype == "literal_error":
            msg = "must be one of " + e["ctx"]["expected"].replace("'", '"')
        elif etype == "value_error":
            msg = str(e["ctx"]["error"])
        else:
            msg = e["msg"][:1].lower() + e["msg"][1:]
        if not isinstance(e.get("input"), dict):
            msg += f" (got {_show(e['input'])})"
        self.add(prefix + loc, msg)

    # -- the parts ----------------------------------------------------------

    def _table_of_tables(self, key: str, required: bool) -> dict[str, dict[str, Any]]:
        """The entries of [key.NAME] tables that are well-formed enough to check."""
        raw = self.data.get(key, {"idle": {}} if key == "loads" else None)
        if raw is None:
            if required:
                self.add((key,), f"is required: add at least one [{key}.NAME] table")
            return {}
        if not isinstance(raw, dict):
            return {}                        # TopLevel reports "must be a table"
        if not raw:
            self.add((key,), f"needs at least one [{key}.NAME] table")
        out = {}
        for name, table in raw.items():
            if not is_valid_name(name):
                self.add((key, name), "names may contain only letters, digits, '_' and '-'")
            elif not isinstance(table, dict):
                self.add((key, name), f"must be a table ([{key}.{name}]) (got {_show(table)})")
            else:
                out[name] = table
        return out

    def _kind_instance(self, registry, section: str, name: str, table: dict, kind_key: str,
                       kind: Any):
        prefix = (section, name)
        if kind is None:
            self.add(prefix + (kind_key,), f"is required (supported: {', '.join(registry.names())})")
            return None
        cls = registry.get(kind) if isinstance(kind, str) else None
        if cls is None:
            self.add(prefix + (kind_key,), registry.unknown_message(kind))
            return None
        params = self.model(cls.Params, {k: v for k, v in table.items() if k != kind_key},
                            prefix, extra_allowed=(kind_key,))
        return None if params is None else cls(name, params)

    def campaign(self) -> Campaign:
        # Unknown top-level keys and the scalars; sections are checked entry by entry.
        top = self.model(TopLevel, self.data, ())
        envs = {}
        for name, table in self._table_of_tables("environments", required=True).items():
            envs[name] = self._kind_instance(TARGETS, "environments", name, table, "target",
                                             table.get("target"))
        loads = {}
        for name, table in self._table_of_tables("loads", required=False).items():
            loads[name] = self._kind_instance(LOADS, "loads", name, table, "kind", kind_of(table))
        benches = {}
        bench_tables = self._table_of_tables("benchmarks", required=True)
        for name, table in bench_tables.items():
            benches[name] = self._kind_instance(BENCHMARKS, "benchmarks", name, table, "kind",
                                                table.get("kind"))
        self._check_loads(envs, loads)
        self._check_peers(envs, bench_tables)
        requirements = self._requirements(envs, loads, benches)

        if self.issues:
            locator = TomlLocator(self.text)
            raise CampaignError(self.filename, [Issue(i.path, i.message, locator.line_of(i.path))
                                                for i in self.issues])
        return Campaign(filename=self.filename, text=self.text, data=self.data, name=top.name,
                        repetitions=top.repetitions, seed=top.seed, environments=envs,
                        loads=loads, benchmarks=benches, requirements=requirements)

    def _check_loads(self, envs: dict, loads: dict) -> None:
        for name, load in loads.items():
            if load is None:
                continue
            if isinstance(load, CombinedLoad):
                self._combine(name, load, loads)
                continue
            where = load.where
            if where not in ("same", NEIGHBOURS) and where not in envs:
                self.add(("loads", name, "where"), _undefined("environment", where, envs)
                         + '; name one of them, "same" for the environment measured, or "neighbours" '
                         "for the other guests of a qemu environment with count > 1")
                continue
            argv = getattr(load.params, "argv", None)
            if argv:
                # The command runs where the load runs: in every environment measured when
                # "same", else in the one named; each target checks it can run it.
                targets = envs.values() if where in ("same", NEIGHBOURS) else [envs[where]]
                for target in targets:
                    problem = target and target.check_program(argv[0])
                    if problem:
                        self.add(("loads", name, "command"), problem)
                        break

    def _check_peers(self, envs: dict, tables: dict) -> None:
        """A benchmark's `peer` (the far end of ipc round trips) names a defined environment.
        From the table, so that it is said even when another key of the benchmark is wrong."""
        for name, table in tables.items():
            cls = BENCHMARKS.get(table["kind"]) if isinstance(table.get("kind"), str) else None
            peer = table.get("peer")
            if cls is not None and "peer" in cls.Params.model_fields and isinstance(peer, str) and peer not in envs:
                self.add(("benchmarks", name, "peer"), _undefined("environment", peer, envs)
                         + "; name the environment the round trips' server runs in")

    def _combine(self, name: str, load: CombinedLoad, loads: dict) -> None:
        """Resolve the parts of a combined load: defined, not itself, not combinations."""
        parts = []
        for j, part in enumerate(load.params.combine):
            path = ("loads", name, "combine", j)
            if part == name:
                self.add(path, f'load "{name}" cannot include itself')
            elif part not in loads:
                self.add(path, _undefined("load", part, loads))
            elif isinstance(loads[part], CombinedLoad) or kind_of(self.data["loads"].get(part, {})) == "combine":
                self.add(path, f'load "{part}" is itself a combination; list its loads here instead '
                               "(combinations do not nest)")
            elif loads[part] is not None:
                parts.append(loads[part])
        load.parts = parts

    def _requirements(self, envs: dict, loads: dict, benches: dict) -> list[dict]:
        raw = self.data.get("requirements", [])
        if not isinstance(raw, list):
            return []
        out = []
        for i, table in enumerate(raw):
            prefix = ("requirements", i)
            if not isinstance(table, dict):
                continue                        # TopLevel reports it
            if "overhead" in table:
                req = self.model(RelativeRequirement, table, prefix)
                if req:
                    self._metric(prefix + ("overhead",), req.overhead, benches)
                    self._comparison(prefix, req, envs)
            elif "metric" in table:
                req = self.model(AbsoluteRequirement, table, prefix)
                if req:
                    self._metric(prefix + ("metric",), req.metric, benches)
                    self._refs(prefix + ("environments",), req.environments, "environment", envs)
            else:
                self.add(prefix, "needs `metric` (an absolute bound) or `overhead` (a relative bound)")
                continue
            if req:
                self._refs(prefix + ("loads",), req.loads, "load", loads)
                out.append(table)
        return out

    def _metric(self, path: tuple, metric: str, benches: dict) -> None:
        bench, _, figure = metric.partition(".")
        if not figure:
            self.add(path, f'must be "<benchmark>.<figure>", e.g. "wakeup.max_us" (got {_show(metric)})')
        elif bench not in benches:
            self.add(path, _undefined("benchmark", bench, benches))
        elif benches[bench] is not None and not _known_figure(benches[bench].kind, figure):
            self.add(path, f'"{figure}" is not a figure of a {benches[bench].kind} benchmark '
                           "(see the metrics reference in docs/)")

    def _refs(self, path: tuple, names: list[str] | None, what: str, defined: dict) -> None:
        for j, name in enumerate(names or []):
            if name not in defined:
                self.add(path + (j,), _undefined(what, name, defined))

    def _comparison(self, prefix: tuple, req: RelativeRequirement, envs: dict) -> None:
        for key in ("baseline", "candidate"):
            name = getattr(req, key)
            if name not in envs:
                self.add(prefix + (key,), _undefined("environment", name, envs))
        if req.baseline == req.candidate:
            self.add(prefix + ("candidate",), "must be another environment than baseline")


def _undefined(what: str, name: Any, defined: dict) -> str:
    names = ", ".join(f'"{n}"' for n in defined) or "none"
    return f"{what} {_show(name)} is not defined (defined: {names})"


def _known_figure(kind: str, figure: str) -> bool:
    # The figures a benchmark yields are analysis's business; until that module is
    # installed, accept any figure rather than guess.
    try:
        from rtvbench.analysis.metrics import known_figure
    except ImportError:
        return True
    return known_figure(kind, figure)
