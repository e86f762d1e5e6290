"""The `command` benchmark: an external tool (cyclictest, stress-ng, hyperfine ...) run in the
measured environment instead of the probe, its output parsed into figures (docs/command.md)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Optional

from pydantic import field_validator, model_validator

from rtvbench.benchmarks.base import BENCHMARKS, Benchmark
from rtvbench.kinds.command.formats import (FIGURE_NAMES, FORMATS, MAX_OUTPUT_BYTES, PARSERS, UNITS, compile_regex,
                                            parse)
from rtvbench.kinds.command.json_paths import compile_path
from rtvbench.loads.command.params import CommandLine
from rtvbench.params import Number, StrictModel
from rtvbench.targets.base import KILL_GRACE_S

#: the placeholder for the file the command writes its results to (cyclictest --json={output})
OUTPUT = "{output}"
#: how long the progress bar assumes a command takes when the campaign does not say
DEFAULT_EXPECTED_S = 10.0
#: the largest `{output}` file read; a larger one fails the measurement unread
MAX_OUTPUT_FILE_BYTES = 16 * 1024 * 1024
#: beyond timeout_s and `timeout`'s grace (KILL_GRACE_S), the time the target has to report the
#: command's end before the host stops it itself: its `timeout` may be gone, or something the command
#: started may hold its output open
COMMAND_SLACK_S = 10.0
_FIGURE_NAME = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
_CPU_PART = re.compile(r"^cpu\d+\.")


class FigureSpec(StrictModel):
    """One figure of `format = "mapping"`: where its number is in the output, its unit, its direction."""

    name: str
    regex: Optional[str] = None
    json_path: Optional[str] = None
    unit: Literal[UNITS] = "count"      # type: ignore[valid-type]
    direction: Literal["lower", "higher"] = "lower"

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        # `cpu<N>.` would read as one CPU's figure of a per-CPU measurement.
        if not _FIGURE_NAME.match(v) or _CPU_PART.match(v):
            raise ValueError("must be words of letters, digits, '_' and '-' joined by '.', not starting with "
                             "cpu<N>. (e.g. \"requests_per_s\")")
        return v

    @field_validator("regex")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is None:
            return v
        # Run by RE2 (compile_regex): a pattern that backtracks catastrophically in Python's `re`
        # still takes linear time there, and one RE2 cannot run is refused here, not at the run.
        groups = compile_regex(v).groups
        if groups != 1:
            raise ValueError(f"must have exactly one capture group, the number (it has {groups})")
        return v

    @field_validator("json_path")
    @classmethod
    def _json_path(cls, v: str | None) -> str | None:
        if v is not None:
            compile_path(v)             # refused here, with the reason, not at the run
        return v

    @model_validator(mode="after")
    def _one_source(self):
        if (self.regex is None) == (self.json_path is None):
            raise ValueError("needs exactly one of regex and json_path")
        return self


class CommandParams(StrictModel):
    # Split and run like the command load's (check_command): no shell unless `sh -c` is written.
    command: CommandLine
    format: Literal[FORMATS]            # type: ignore[valid-type]
    timeout_s: Number = 300
    figures: list[FigureSpec] = []
    # For the progress bar only: how long one run of the command takes.
    expected_s: Optional[Number] = None

    @field_validator("timeout_s", "expected_s")
    @classmethod
    def _seconds(cls, v: float | None) -> float | None:
        if v is not None and not 0 < v <= 86400:
            raise ValueError("must be more than 0 and at most 86400 seconds")
        return v

    @model_validator(mode="after")
    def _figures_with_mapping(self):
        if self.format == "mapping" and not self.figures:
            raise ValueError('format = "mapping" needs figures: [[benchmarks.<name>.figures]] tables '
                             "with name, regex or json_path, unit and direction")
        if self.format != "mapping" and self.figures:
            raise ValueError(f'figures are for format = "mapping"; format "{self.format}" names its own')
        names = [f.name for f in self.figures]
        if len(set(names)) != len(names):
            raise ValueError("figures must have different names")
        return self

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command)


#: the longest text of a tool's recorded parameters kept in an imported benchmark's `command` key
MAX_PARAMETERS_TEXT = 1000


def parameters_text(parameters: Any) -> str:
    """A tool's recorded parameters (Parsed.parameters) as one line: `commands: sleep 0.01; sleep 0.05`."""
    if not isinstance(parameters, dict) or not parameters:
        return "(the output records no parameters)"
    parts = []
    for key, value in parameters.items():
        shown = "; ".join(map(str, value)) if isinstance(value, list) else str(value)
        parts.append(f"{key}: {shown}")
    text = ", ".join(parts)
    return text if len(text) <= MAX_PARAMETERS_TEXT else text[:MAX_PARAMETERS_TEXT - 3] + "..."


@BENCHMARKS.register("command")
class CommandBenchmark(Benchmark):
    kind = "command"
    Params = CommandParams
    runs_probe: ClassVar[bool] = False
    #: the most stdout a command may print; beyond it the measurement fails (docs/command.md)
    max_stdout_bytes: ClassVar[int] = MAX_OUTPUT_BYTES
    # mapping needs its figures from a campaign, which a file made elsewhere does not come with
    import_formats: ClassVar[tuple[str, ...]] = tuple(PARSERS)

    @classmethod
    def import_keys(cls, fmt: str, record: dict[str, Any]) -> dict[str, str]:
        # What the tool recorded of how it ran stands for the command: two imports then differ in
        # their parameters only where the tool's own do, not where their files' names do.
        return {"command": f"(imported) {parameters_text(record.get('parameters'))}", "format": fmt}

    @classmethod
    def parse_import(cls, fmt: str, text: str) -> dict[str, Any]:
        return parse(fmt, text).record(fmt)

    @property
    def writes_file(self) -> bool:
        """Whether the figures are in a file the command writes (`{output}` in it), not its stdout."""
        return any(OUTPUT in arg for arg in self.params.argv)

    def output_path(self, private_dir: Callable[[], str]) -> str | None:
        """The file the command writes, or None: in a new directory of its own on the target, which
        `private_dir` makes (and the runner removes afterwards)."""
        return f"{private_dir()}/output" if self.writes_file else None

    def read_output(self, target, path: str) -> str | None:
        """The text of the file the command wrote at `path`, None if it wrote none; TargetError (one
        sentence) when it is not a regular file or holds more than MAX_OUTPUT_FILE_BYTES."""
        return target.read_regular_file(path, MAX_OUTPUT_FILE_BYTES)

    def command_argv(self, output: str | None) -> list[str]:
        """The command as run: `{output}` replaced, under coreutils/busybox `timeout` so that a hung
        tool ends on every target the same way: SIGTERM at timeout_s, SIGKILL KILL_GRACE_S later."""
        argv = [arg.replace(OUTPUT, output) if output else arg for arg in self.params.argv]
        return ["timeout", "-k", f"{KILL_GRACE_S:g}", f"{self.params.timeout_s:g}", *argv]

    @property
    def timeout_s(self) -> float:
        return self.params.timeout_s

    def probe_args(self) -> list[str]:
        # No probe: what runs is the command itself (command_argv).
        return self.params.argv

    def parse(self, text: str) -> dict[str, Any]:
        """The `result` record of an output; FormatError (one sentence) when it cannot be read."""
        figures = [f.model_dump() for f in self.params.figures]
        return parse(self.params.format, text, figures).record(self.params.format)

    def figure_problem(self, figure: str) -> str | None:
        p: CommandParams = self.params
        if p.format == "mapping":
            names = [f.name for f in p.figures]
            return None if figure in names else f"is not one of the benchmark's figures ({', '.join(names)})"
        if not FIGURE_NAMES[p.format].match(figure):
            return f'is not a figure format "{p.format}" yields (see docs/command.md)'
        return None

    def expected_seconds(self) -> float:
        p: CommandParams = self.params
        return min(p.expected_s or DEFAULT_EXPECTED_S, p.timeout_s)

    def deadline_s(self, slowdown: float = 1.0) -> float:
        # timeout_s is the campaign's own bound, in the target's time whatever its speed.
        return self.params.timeout_s + KILL_GRACE_S + COMMAND_SLACK_S

