"""The `command` load: any external command (stress-ng, a script ...), run for the
duration of each measurement."""

from __future__ import annotations

import shlex
from typing import Annotated

from pydantic import AfterValidator

from rtvbench.loads.base import LOADS, Load, LoadContext, SettleS
from rtvbench.params import Name, StrictModel
from rtvbench.targets.base import Background


#: the longest single argument Linux passes to a program (MAX_ARG_STRLEN)
MAX_COMMAND = 128 * 1024


def check_command(v: str) -> str:
    """A command line that splits into arguments: no shell, so it is split like a shell would but run
    directly; whoever wants pipes or `&` writes `sh -c "..."` explicitly."""
    if len(v) > MAX_COMMAND:
        # Linux passes no argument longer than this; and shlex takes quadratic time on long words.
        raise ValueError(f"must be at most {MAX_COMMAND:,} characters (got {len(v):,})")
    try:
        argv = shlex.split(v)
    except ValueError as e:
        raise ValueError(f"cannot be split into arguments ({e})") from None
    if not argv:
        raise ValueError("must not be empty")
    return v


#: a command line campaign key (the load's, and a benchmark's that runs a tool of its own)
CommandLine = Annotated[str, AfterValidator(check_command)]


class CommandParams(StrictModel):
    command: CommandLine
    where: Name = "same"
    # Time the load gets to reach full strength before the probe starts
    # (stress-ng forks its workers, a script warms up ...).
    settle_s: SettleS = 0.5

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command)


@LOADS.register("command")
class CommandLoad(Load):
    kind = "command"
    Params = CommandParams

    def commands(self) -> list[str]:
        return [self.params.command]

    def launch(self, ctx: LoadContext) -> Background | None:
        # In the environment `where` names: its target starts the command there.
        return ctx.site(self.where).target.start_background(self.params.argv)
