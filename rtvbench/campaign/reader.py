"""Load and validate a campaign file (docs/campaign.md, "Campaign file reference (v1)").

Validation happens before anything runs and reports every problem at once, each
as `FILE:LINE: KEY: message`. The file's shape is checked here; what the keys of
an environment, a load or a benchmark mean is checked by the pydantic model of its
kind (rtvbench.targets / loads / benchmarks), so that adding a kind is one module.
"""

from __future__ import annotations

import json
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

from pydantic import BaseModel, TypeAdapter, ValidationError, field_validator, model_validator
from pydantic_core import to_jsonable_python

from rtvbench.benchmarks import BENCHMARKS, Benchmark
from rtvbench.errors import InputError
from rtvbench.loads.base import LOADS, NEIGHBOURS, Load, kind_of
from rtvbench.loads.combine.params import CombinedLoad
from rtvbench.params import Name, Number, SizeRange, StrictModel, int_range, is_valid_name, number_range
from rtvbench.preflight import unusable_cpus
from rtvbench.spec import BenchmarkSpec, CampaignSpec, EnvironmentSpec, LoadSpec, Placement
from rtvbench.targets import TARGETS, Target, capabilities
from rtvbench.targets.capabilities import PowerCycling
from rtvbench.targets import shm as shm_regions
from rtvbench.tomlloc import TomlLocator, format_path

if sys.version_info >= (3, 11):
    import tomllib
else:                                   # pragma: no cover
    import tomli as tomllib

#: far more than any campaign: a bigger file is something else (a log, an image, a device)
MAX_CAMPAIGN_BYTES = 1 << 20
#: (benchmark kind, figure name) -> whether the kind yields that figure
FigureCheck = Callable[[str, str], bool]


def default_campaign_path() -> Path:
    """The built-in campaign "evaluate this machine" (package data, installed as a file beside the
    modules: importlib.resources would import tempfile and zipfile into every validate for it)."""
    return Path(__file__).resolve().parent.parent / "campaigns" / "default.toml"


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


#: the most repetitions a campaign may ask for, and the largest seed the store keeps (a signed 64-bit
#: integer); a campaign name is also a report's file name, so it stays well below file-name limits, and
#: so do the names of environments, loads and benchmarks, which also fit the store's name columns
MAX_REPETITIONS, MAX_SEED, MAX_NAME = 100_000, 2**63 - 1, 100
#: lanes measuring at once: a farm of boards, each lane a thread of the runner that mostly waits
MAX_JOBS = 256


#: a requirement's bound, in the figure's unit: beyond what any figure reaches (16 GiB in bytes, a day in ns)
MAX_BOUND = 1e15
Bound = number_range(-MAX_BOUND, MAX_BOUND)
#: a relative requirement's overhead in percent: a candidate a million percent slower is no comparison
OverheadPercent = number_range(-100, 1e6, "a percentage")


class ConditionsLimits(StrictModel):
    """`[conditions]`: what a clean measurement is (rtvbench.analysis.conditions)."""
    max_foreign_percent: Number = 5.0       # of the measured CPUs' time, to processes other than the probe
    max_steal_percent: Number = 2.0         # of the measured CPUs' time, stolen by a hypervisor

    @field_validator("max_foreign_percent", "max_steal_percent")
    @classmethod
    def _percent(cls, v):
        if not 0 <= v <= 100:
            raise ValueError("must be a percentage from 0 to 100")
        return v


class TopLevel(StrictModel):
    name: Name
    repetitions: int_range(1, MAX_REPETITIONS) = 1
    seed: int_range(0, MAX_SEED) = 0
    # How many lanes (groups of machines) measure at the same time; `run --jobs` wins.
    jobs: int_range(1, MAX_JOBS) = 1
    # A comparison says "equivalent" (no measurable difference) only within this margin.
    equivalence_percent: Number = 10.0
    conditions: ConditionsLimits = ConditionsLimits()
    # Checked entry by entry below, against the model of each entry's kind.
    environments: Optional[dict[str, Any]] = None      # required: reported by _table_of_tables
    loads: dict[str, Any] = {"idle": {}}
    benchmarks: Optional[dict[str, Any]] = None
    requirements: list[Any] = []
    comparisons: list[Any] = []

    @field_validator("equivalence_percent")
    @classmethod
    def _margin(cls, v):
        if not 0 < v <= 100:
            raise ValueError("must be a margin in percent above 0 and at most 100, e.g. 10")
        return v

    @field_validator("name")
    @classmethod
    def _short(cls, v):
        if len(v) > MAX_NAME:
            raise ValueError(f"must be at most {MAX_NAME} characters")
        return v


class AbsoluteRequirement(StrictModel):
    metric: str
    environments: Optional[list[str]] = None
    loads: Optional[list[str]] = None
    max: Optional[Bound] = None
    min: Optional[Bound] = None

    @model_validator(mode="after")
    def _bounded(self):
        if self.max is None and self.min is None:
            raise ValueError("needs a bound: max, min or both")
        if self.max is not None and self.min is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max})")
        return self


class DeclaredComparison(StrictModel):
    """`[[comparisons]]`: a candidate against a baseline beside the default comparisons (every
    environment against the first, every load against the idle one). Two environments are compared
    under each of `loads`, two loads in each of `environments`."""
    baseline: str
    candidate: str
    loads: Optional[list[str]] = None
    environments: Optional[list[str]] = None
    benchmarks: Optional[list[str]] = None


class RelativeRequirement(StrictModel):
    overhead: str
    baseline: str               # environment names
    candidate: str
    loads: Optional[list[str]] = None
    max_percent: OverheadPercent


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
    equivalence_percent: float = 10.0
    conditions: dict[str, float] = field(default_factory=dict)
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    jobs: int = 1

    @property
    def hash(self) -> str:
        import hashlib          # only a run needs the digest: validate does not pay for OpenSSL
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def measurement_count(self) -> int:
        return len(self.environments) * len(self.loads) * len(self.benchmarks) * self.repetitions

    def spec(self) -> CampaignSpec:
        """The campaign as validated, every default filled in: what is stored with a run."""
        return CampaignSpec(
            name=self.name, repetitions=self.repetitions, seed=self.seed,
            environments={name: EnvironmentSpec(name, target.kind, params_json(target.params))
                          for name, target in self.environments.items()},
            loads={name: _load_spec(load) for name, load in self.loads.items()},
            benchmarks={name: BenchmarkSpec(name, bench.kind, params_json(bench.params),
                                            bench.placement() if hasattr(bench, "placement") else Placement())
                        for name, bench in self.benchmarks.items()},
            requirements=[_requirement_json(r) for r in self.requirements],
            equivalence_percent=float(self.equivalence_percent), conditions=dict(self.conditions),
            comparisons=[_comparison_json(c) for c in self.comparisons])


def load_campaign(path: str | Path | None, known_figure: FigureCheck | None = None) -> Campaign:
    """Read and validate a campaign file (None: the built-in default campaign).

    The figures a benchmark yields are the analysis stage's knowledge, which the campaign stage
    does not import: the caller passes `known_figure` (rtvbench.analysis.metrics.known_figure)
    to check requirements' metric names, or None to leave them to the report."""
    if path is None:
        path = default_campaign_path()
        filename = "default campaign (" + str(path) + ")"
    else:
        filename = str(path)
    path = Path(path)
    text = read_input_text(path, filename, "campaign file", "name the campaign's .toml file", MAX_CAMPAIGN_BYTES)
    return parse_campaign(text, filename, path.resolve().parent, known_figure)


def read_input_text(path: Path, filename: str, what: str, fix: str, max_bytes: int) -> str:
    """The UTF-8 text of a file the user named (`what`: "campaign file" ...), or InputError saying what
    is wrong with it and `fix`, what to name instead."""
    try:
        # A device or a FIFO would be read forever (/dev/zero) or block (a pipe nobody writes).
        info = path.stat()
        if path.is_dir():
            raise IsADirectoryError
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{filename} is not a regular file; {fix}.")
        if info.st_size > max_bytes:
            raise InputError(f"{filename} is {info.st_size:,} bytes, more than a {what} has "
                             f"({max_bytes:,}); {fix}.")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{filename}: no such {what}; check the path.") from None
    except IsADirectoryError:
        raise InputError(f"{filename} is a directory, not a {what}; {fix}.") from None
    except UnicodeDecodeError:
        raise InputError(f"{filename} is not UTF-8 text; save the {what} as UTF-8.") from None
    except OSError as e:
        raise InputError(f"{filename}: cannot read it ({e.strerror}); check its permissions.") from None


def stored_spec(text: str) -> CampaignSpec:
    """The spec of a campaign text stored with a run (runs stored before specs were), built here
    and now without looking at this machine: whatever has moved or changed since the run must not
    keep its results from being read.

    Benchmarks and loads are validated as `parse_campaign` does (their models check nothing outside
    the campaign), so their defaults are today's models' defaults. Environments are taken as
    written, their keys type-checked and defaults filled, but without the checks of their fields
    (kernel images, module directories and ssh configs that exist, host CPUs usable here): the
    campaign's directory is not stored, so a relative path stays as written. Load commands are not
    looked up, requirements' figures not checked. An entry the models reject anyway (a key a later
    version renamed) keeps the values it could and the defaults of the rest; one of a kind this
    version does not know keeps its keys as written. Raises CampaignError only for text that is
    not TOML or has no usable name."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CampaignError("<stored campaign>", [Issue((), f"invalid TOML: {e}")]) from None
    return _Validator(text, "<stored campaign>", data, Path.cwd(), None, stored=True).campaign().spec()


def recorded_campaign(text: str) -> Campaign:
    """A campaign written by rtvbench itself to record results made elsewhere (`rtvbench import`),
    built like a stored one: its environment names a machine this rtvbench never reaches, so nothing
    about this machine is checked and a target kind it does not know is kept as written."""
    data = tomllib.loads(text)
    return _Validator(text, "<imported>", data, Path.cwd(), None, stored=True).campaign()


def spec_of(data: dict[str, Any]) -> CampaignSpec:
    """The spec of an already parsed campaign (a table of tables), resolved as `stored_spec` does."""
    return _Validator("", "<campaign>", data, Path.cwd(), None, stored=True).campaign().spec()


_TOML_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def parse_campaign(text: str, filename: str = "<campaign>", base_dir: Path | None = None,
                   known_figure: FigureCheck | None = None) -> Campaign:
    """Validate campaign text; relative paths in it (a kernel image, an ssh config) are taken
    from base_dir, the campaign file's directory (default: the working directory)."""
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise CampaignError(filename, [Issue((), "invalid TOML: nested too deeply")]) from None
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_POS.search(msg)
        if m:
            msg = _TOML_POS.sub("", msg)
            raise CampaignError(filename, [Issue((), f"invalid TOML at column {m.group(2)}: {msg}",
                                                 int(m.group(1)))]) from None
        raise CampaignError(filename, [Issue((), f"invalid TOML: {msg}")]) from None
    return _Validator(text, filename, data, base_dir or Path.cwd(), known_figure).campaign()


# ---------------------------------------------------------------------------


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


class _Validator:
    """Collects every issue of one parsed file, then builds the Campaign or raises."""

    def __init__(self, text: str, filename: str, data: dict[str, Any], base_dir: Path,
                 known_figure: FigureCheck | None, stored: bool = False) -> None:
        self.text, self.filename, self.data = text, filename, data
        self.base_dir = base_dir
        self.known_figure = known_figure
        # A campaign stored with a run, read back for its spec (stored_spec): nothing about this
        # machine is checked, and every entry is built as well as it can be instead of refused.
        self.stored = stored
        self.issues: list[Issue] = []

    def add(self, path: tuple, message: str) -> None:
        self.issues.append(Issue(tuple(path), message))

    def model(self, model: type[StrictModel], data: Any, prefix: tuple,
              extra_allowed: tuple[str, ...] = ()) -> StrictModel | None:
        """Validate data against model; on errors record them under prefix."""
        if self.stored and prefix[:1] == ("environments",):
            return _as_written(model, data)
        try:
            # Validators that resolve a relative path read it from the context (`base_dir`).
            return model.model_validate(data, context={"base_dir": self.base_dir})
        except ValidationError as exc:
            for e in exc.errors(include_url=False):
                self._pydantic_issue(e, model, prefix, extra_allowed)
            return _as_written(model, data) if self.stored else None

    def _pydantic_issue(self, e: dict, model: type[StrictModel], prefix: tuple,
                        extra_allowed: tuple[str, ...]) -> None:
        loc, etype = tuple(e["loc"]), e["type"]
        if etype == "extra_forbidden":
            allowed = sorted(set(model.model_fields) | set(extra_allowed))
            import difflib      # for a mistyped key only: validate of a correct campaign goes without
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
            elif len(name) > MAX_NAME:
                self.add((key, name), f"names may be at most {MAX_NAME} characters long")
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
            if self.stored:
                return _UnknownKind(name, str(kind), {k: v for k, v in table.items() if k != kind_key})
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
        self._check_names_apart(envs, loads)
        self._check_loads(envs, loads)
        self._check_programs(envs, benches)
        self._check_shm_sizes(envs)
        self._check_peers(envs, bench_tables, benches)
        self._check_with_campaign(envs, loads, benches)
        self._check_probe_subsets(envs, loads, benches)
        requirements = self._requirements(envs, loads, benches)
        comparisons = self._comparisons(envs, loads, benches)

        if self.stored:
            if top is None or not isinstance(getattr(top, "name", None), str):
                raise CampaignError(self.filename, [Issue(("name",), "is missing or not a name")])
            envs, loads, benches = ({n: x for n, x in d.items() if x is not None}
                                    for d in (envs, loads, benches))
        if self.issues and not self.stored:
            self._refuse()
        campaign = Campaign(filename=self.filename, text=self.text, data=self.data, name=top.name,
                            repetitions=top.repetitions, seed=top.seed, environments=envs,
                            loads=loads, benchmarks=benches, requirements=requirements, comparisons=comparisons,
                            equivalence_percent=float(getattr(top, "equivalence_percent", 10.0)),
                            jobs=getattr(top, "jobs", 1),
                            conditions=(top.conditions.model_dump()
                                        if isinstance(getattr(top, "conditions", None), ConditionsLimits) else {}))
        if not self.stored:
            # Pinned CPUs are checked on the resolved campaign (each kind says where it pins), once the
            # rest is valid.
            self._check_cpus(campaign)
            if self.issues:
                self._refuse()
        return campaign

    def _refuse(self) -> None:
        locator = TomlLocator(self.text)
        raise CampaignError(self.filename, [Issue(i.path, i.message, locator.line_of(i.path))
                                            for i in self.issues])

    def _check_cpus(self, campaign: Campaign) -> None:
        """CPUs a benchmark or a load is pinned to that an environment does not have, where this machine can
        tell (itself, a guest's vCPUs): what `run` would otherwise find out measurement after measurement."""
        known = {name: cpus for name, target in campaign.environments.items()
                 if isinstance(target, Target) and (cpus := target.known_cpus())}
        for path, message in unusable_cpus(campaign.spec(), known):
            self.add(path, message)

    def _check_names_apart(self, envs: dict, loads: dict) -> None:
        """A comparison names its baseline and candidate by name, environment or load: one name is never both."""
        for name in loads:
            if name in envs:
                self.add(("loads", name), f'is also the name of an environment, so "{name}" in a comparison or '
                                          "a requirement would be ambiguous; rename the load or the environment")

    def _check_loads(self, envs: dict, loads: dict) -> None:
        for name, load in loads.items():
            if load is None:
                continue
            if isinstance(load, CombinedLoad):
                self._combine(name, load, loads)
                continue
            where = load.where
            if PowerCycling in load.requires and where == "same":
                self.add(("loads", name, "where"), f'a {load.kind} load power-cycles a guest beside the one measured: '
                         'name "neighbours" (the other guests of a qemu environment with count > 1)')
                continue
            if PowerCycling in load.requires and where in envs:
                # The plan measures every environment under every load: under this one, `where` itself
                # would be measured while the load power-cycles it, a failure retried until it passes.
                self.add(("loads", name, "where"), f'environment "{where}" is measured under this load too (every '
                         f"environment is measured under every load), and a {load.kind} load would power-cycle it "
                         'while it measures; name "neighbours" (the other guests of a qemu environment with '
                         "count > 1) instead")
                continue
            lacking = [(cap, problem) for cap in load.requires if where in envs and envs[where] is not None
                       and (problem := capabilities.missing(envs[where], cap))]
            if lacking:
                cap, problem = lacking[0]
                self.add(("loads", name, "where"), f'environment "{where}" is {problem}, which rtvbench cannot '
                         f'{cap.verb}; name one of {cap.advice}, or "neighbours"')
                continue
            if where not in ("same", NEIGHBOURS) and where not in envs:
                self.add(("loads", name, "where"), _undefined("environment", where, envs)
                         + '; name one of them, "same" for the environment measured, or "neighbours" '
                         "for the other guests of a qemu environment with count > 1")
                continue
            argv = getattr(load.params, "argv", None)
            if argv and not self.stored:
                # The command runs where the load runs: in every environment measured when
                # "same", else in the one named; each target checks it can run it.
                targets = envs.values() if where in ("same", NEIGHBOURS) else [envs[where]]
                for target in targets:
                    problem = target and target.check_program(argv[0])
                    if problem:
                        self.add(("loads", name, "command"), problem)
                        break

    def _check_programs(self, envs: dict, benches: dict) -> None:
        """A benchmark that runs a program of its own instead of the probe runs it in every
        environment: each target checks it can (a qemu guest holds only the probe)."""
        if self.stored:
            return
        for name, bench in benches.items():
            argv = getattr(bench.params, "argv", None) if bench is not None and not bench.runs_probe else None
            for env, target in envs.items() if argv else ():
                problem = target and target.check_program(argv[0])
                if problem:
                    self.add(("benchmarks", name, "command"), f"in environment {env}: {problem}")
                    break

    def _check_shm_sizes(self, envs: dict) -> None:
        """Environments that name one shm region share one file: they agree on its size."""
        sizes: dict[str, tuple[str, int]] = {}
        for name, target in envs.items():
            # A stored run's target of a kind this rtvbench does not know (an imported run's) has none.
            region = target.shm_region() if isinstance(target, Target) else None
            if region is None:
                continue
            size = target.params.shm_size_mb
            first = sizes.setdefault(region, (name, size))
            if first[1] != size:
                self.add(("environments", name, "shm_size_mb"),
                         f'environment {first[0]} gives shm region "{region}" {first[1]} MiB, this one {size}; '
                         "environments that share a region give it one size")

    def _check_peers(self, envs: dict, tables: dict, benches: dict) -> None:
        """A benchmark's `peer` (the far end of ipc round trips) names a defined environment.
        From the table, so that it is said even when another key of the benchmark is wrong."""
        for name, table in tables.items():
            cls = BENCHMARKS.get(table["kind"]) if isinstance(table.get("kind"), str) else None
            peer = table.get("peer")
            if cls is None or "peer" not in cls.Params.model_fields or not isinstance(peer, str):
                continue
            if peer not in envs:
                self.add(("benchmarks", name, "peer"), _undefined("environment", peer, envs)
                         + "; name the environment the round trips' server runs in")
            elif envs[peer] is not None:
                # Every environment measures it, each a client of the server in `peer`: what `run`
                # would refuse before its first measurement, refused here.
                transports = table.get("transports")
                transport = "shm" if transports == ["shm"] else "tcp"
                for target in envs.values():
                    problem = target and target.round_trip_problem(envs[peer], transport)
                    if problem:
                        self.add(("benchmarks", name, "peer"), problem)
                        break
                if transport == "shm" and benches.get(name) is not None:
                    self._check_shm_fits(name, benches[name], envs)

    def _check_shm_fits(self, name: str, bench, envs: dict) -> None:
        """Every size of a shm benchmark fits the regions of the guests it runs in."""
        largest = bench.largest_size()
        for env, target in envs.items():
            # A stored run's target of a kind this rtvbench does not know (an imported run's) has none.
            region = target.shm_region() if isinstance(target, Target) else None
            if region is None:
                continue
            size_mb = target.params.shm_size_mb
            capacity = shm_regions.capacity(size_mb << 20)
            if largest > capacity:
                self.add(("benchmarks", name, "sizes"),
                         f'{largest}-byte messages do not fit shm region "{region}" of environment {env} '
                         f"({size_mb} MiB: at most {capacity} bytes each way); give it a larger shm_size_mb "
                         "or use smaller sizes")
                return

    def _check_with_campaign(self, envs: dict, loads: dict, benches: dict) -> None:
        """What a benchmark kind cannot run with in this campaign (its environments, its loads), as the
        kind itself says (Benchmark.campaign_problems)."""
        for name, bench in benches.items():
            if bench is None:
                continue
            for cap in bench.requires:
                lacking = [(env, problem) for env, target in envs.items()
                           if target is not None and (problem := capabilities.missing(target, cap))]
                if lacking:
                    env, problem = lacking[0]
                    self.add(("benchmarks", name, "kind"),
                             f'"{bench.kind}" needs to {cap.verb} every environment it measures, and environment '
                             f'"{env}" is {problem}, which rtvbench cannot {cap.verb}; measure it in {cap.advice}')
            for path, message in bench.campaign_problems(envs, loads):
                self.add(path, message)

    def _check_probe_subsets(self, envs: dict, loads: dict, benches: dict) -> None:
        """What an environment that is its probe alone (capabilities.ProbeSubset) cannot run: a benchmark
        kind the freestanding probe lacks, a key it cannot honour, a load in it. Every environment measures
        every benchmark under every load, so one such thing refuses the campaign."""
        subsets = {env: target for env, target in envs.items() if isinstance(target, capabilities.ProbeSubset)}
        if not subsets:
            return
        served = [n for n in BENCHMARKS.names() if BENCHMARKS.get(n).freestanding_options is not None]
        runs = ", ".join(f'"{kind}"' for kind in served) or "no benchmark kind"
        for env, target in subsets.items():
            what = target.describe_self()
            for name, bench in benches.items():
                if bench is None:
                    continue
                accepted = bench.freestanding_options if bench.runs_probe else None
                if accepted is None:
                    self.add(("benchmarks", name, "kind"),
                             f'"{bench.kind}" cannot run in environment "{env}", {what}, which runs only {runs}; '
                             "measure it in a campaign without that environment")
                    continue
                honoured = [k for k, option in bench.key_options.items() if option in accepted]
                table = self.data.get("benchmarks", {}).get(name, {})
                for key in table:
                    if key != "kind" and key not in honoured:
                        self.add(("benchmarks", name, key),
                                 f'cannot be honoured in environment "{env}", {what}, whose "{bench.kind}" takes '
                                 f"only {', '.join(honoured)}; drop {key} or measure environment \"{env}\" in a "
                                 "campaign of its own")
                for key, why in bench.freestanding_problems(target.memory_area_bytes()):
                    self.add(("benchmarks", name, key), f'cannot be honoured in environment "{env}", {what}: {why}')
            for name, load in loads.items():
                parts = load.parts if isinstance(load, CombinedLoad) else [load]
                # A load that runs nothing (idle) runs nowhere.
                if any(part is not None and part.commands() and part.where in ("same", env) for part in parts):
                    self.add(("loads", name, "where"),
                             f'environment "{env}" is {what}, which runs no loads (only {runs}); run the load in '
                             "another environment of the campaign, beside it")

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

    def _array_of_tables(self, key: str, needs: str):
        """(path, table) of each entry of an array of tables such as [[requirements]]; an entry that is
        not a table is said (`needs`: what it must hold) and skipped. (The TopLevel model has said it
        already when the array itself is not a list.)"""
        raw = self.data.get(key, [])
        for i, table in enumerate(raw if isinstance(raw, list) else []):
            if isinstance(table, dict):
                yield (key, i), table
            else:
                self.add((key, i), f"must be a table ([[{key}]] with {needs}) (got {_show(table)})")

    def _requirements(self, envs: dict, loads: dict, benches: dict) -> list[dict]:
        out = []
        for prefix, table in self._array_of_tables("requirements", "metric or overhead"):
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
            elif self.stored:
                out.append(table)
        return out

    def _comparisons(self, envs: dict, loads: dict, benches: dict) -> list[dict]:
        out = []
        for prefix, table in self._array_of_tables("comparisons", "baseline and candidate"):
            decl = self.model(DeclaredComparison, table, prefix)
            if decl is None:
                if self.stored:
                    out.append(table)
                continue
            axis = self._comparison_axis(prefix, decl, envs, loads)
            self._refs(prefix + ("benchmarks",), decl.benchmarks, "benchmark", benches)
            if axis == "environment":
                self._refs(prefix + ("loads",), decl.loads, "load", loads)
                if decl.environments is not None:
                    self.add(prefix + ("environments",), "applies to a comparison of two loads; two environments "
                                                         "are compared under `loads`")
            elif axis == "load":
                self._refs(prefix + ("environments",), decl.environments, "environment", envs)
                if decl.loads is not None:
                    self.add(prefix + ("loads",), "applies to a comparison of two environments; two loads "
                                                  "are compared in `environments`")
            out.append(table)
        return out

    def _comparison_axis(self, prefix: tuple, decl: DeclaredComparison, envs: dict, loads: dict) -> str | None:
        """"environment" when baseline and candidate name environments, "load" when they name loads."""
        kinds = []
        for key in ("baseline", "candidate"):
            name = getattr(decl, key)
            found = [what for what, names in (("environment", envs), ("load", loads)) if name in names]
            if not found:
                self.add(prefix + (key,), f"{_show(name)} is neither an environment nor a load "
                                          f"(environments: {', '.join(envs) or 'none'}; loads: "
                                          f"{', '.join(loads) or 'none'})")
                return None
            kinds.append(found)
        common = [k for k in kinds[0] if k in kinds[1]]
        if not common:
            article = {"environment": "an environment", "load": "a load"}
            self.add(prefix + ("candidate",), f'"{decl.candidate}" is {article[kinds[1][0]]} while the baseline '
                                              f'"{decl.baseline}" is {article[kinds[0][0]]}; compare two '
                                              "environments or two loads")
            return None
        if len(common) > 1:
            self.add(prefix, f'"{decl.baseline}" and "{decl.candidate}" each name both an environment and a '
                             "load; rename one of them so that the comparison is unambiguous")
            return None
        if decl.baseline == decl.candidate:
            self.add(prefix + ("candidate",), f"must be another {common[0]} than baseline")
            return None
        return common[0]

    def _metric(self, path: tuple, metric: str, benches: dict) -> None:
        bench, _, figure = metric.partition(".")
        if not figure:
            self.add(path, f'must be "<benchmark>.<figure>", e.g. "wakeup.max_us" (got {_show(metric)})')
        elif bench not in benches:
            self.add(path, _undefined("benchmark", bench, benches))
        elif (benches[bench] is not None and self.known_figure is not None
              and not self.known_figure(benches[bench].kind, figure)):
            self.add(path, f'"{figure}" is not a figure of a {benches[bench].kind} benchmark '
                           "(see the metrics reference in docs/)")
        elif benches[bench] is not None and (problem := benches[bench].figure_problem(figure)):
            self.add(path, f'"{figure}" {problem}')

    def _refs(self, path: tuple, names: list[str] | None, what: str, defined: dict) -> None:
        for j, name in enumerate(names or []):
            if name not in defined:
                self.add(path + (j,), _undefined(what, name, defined))
            elif name in names[:j]:
                self.add(path + (j,), f'names {what} "{name}" a second time; list each {what} once')

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



# ---------------------------------------------------------------------------
# The spec (rtvbench.spec) of validated kinds


def _json_value(v: Any) -> Any:
    """A validated value as JSON: sizes stay byte counts, a size sweep is the probe's "LO-HI"."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, SizeRange):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    if isinstance(v, BaseModel):
        return params_json(v)
    return to_jsonable_python(v, fallback=str)


def params_json(params: Any) -> dict[str, Any]:
    """Every key of a kind's validated model, in declared order, as JSON values."""
    if isinstance(params, dict):
        return _json_value(params)
    return {name: _json_value(getattr(params, name, None)) for name in type(params).model_fields}


def _load_spec(load: Any) -> LoadSpec:
    params = params_json(load.params)
    where = params.pop("where", "same")
    parts = params.pop("combine", []) if load.kind == "combine" else []
    try:
        commands = tuple(load.commands())
    except (TypeError, ValueError, AttributeError):     # a stored entry built as well as it could be
        commands = ()
    return LoadSpec(load.name, None if load.kind == "idle" else load.kind, params,
                    where if isinstance(where, str) else "same", tuple(parts), commands)


def _comparison_json(table: dict[str, Any]) -> dict[str, Any]:
    try:
        validated = DeclaredComparison.model_validate(table)
    except ValidationError:                             # a stored one this version would refuse
        return _json_value(table)
    return {k: v for k, v in params_json(validated).items() if v is not None}


def _requirement_json(table: dict[str, Any]) -> dict[str, Any]:
    model = RelativeRequirement if "overhead" in table else AbsoluteRequirement
    try:
        validated = model.model_validate(table)
    except ValidationError:                             # a stored one this version would refuse
        return _json_value(table)
    return {k: v for k, v in params_json(validated).items() if v is not None}


def _as_written(model: type[StrictModel], data: Any) -> StrictModel | None:
    """The model of a table without its validators: each key type-checked alone (kept as written
    when it fails), unknown keys dropped, the defaults of the keys not given. For stored campaigns."""
    if not isinstance(data, dict):
        return None
    values = {}
    for name, info in model.model_fields.items():
        if name in data:
            try:
                adapter = TypeAdapter(Annotated[(info.annotation, *info.metadata)] if info.metadata
                                      else info.annotation)
                values[name] = adapter.validate_python(data[name], strict=True)
            except (ValidationError, TypeError):
                values[name] = data[name]
        elif not info.is_required():
            values[name] = info.get_default(call_default_factory=True)
    return model.model_construct(**values)


class _UnknownKind:
    """An entry of a stored campaign whose kind this version of rtvbench does not know."""

    where = "same"
    requires = ()

    def __init__(self, name: str, kind: str, params: dict[str, Any]) -> None:
        self.name, self.kind, self.params = name, kind, params

    def commands(self) -> list[str]:
        return []
