"""rtvbench(1), the manual page, written from the Click commands themselves: every command with its
usage, help and options, as `--help` shows them, so that a new command or option is in the page of
the next build without anyone writing it twice. setup.py runs this module when it builds the wheel,
which installs the page as share/man/man1/rtvbench.1.

    python -m rtvbench.manpage PATH [VERSION]
"""

from __future__ import annotations

import datetime
import inspect
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import click

# What the README says of them, one line each; the exit codes are rtvbench.errors'.
ENVIRONMENT = (
    ("RTVBENCH_STORE", "The store URL when --store is not given (default: SQLite at "
                       "rtvbench-results/rtvbench.db)."),
    ("RTVBENCH_UMASK", "An octal umask for the store, reports and their directories (default: 077, "
                       "its user's alone)."),
    ("RTVBENCH_PROBE", "The rtvb-probe to run on this machine's architecture (RTVBENCH_PROBE_<ARCH> "
                       "for another one's targets)."),
    ("RTVBENCH_DEBUG", "1: an internal error shows its traceback."),
)
EXIT_STATUS = (
    ("0", "ok"),
    ("1", "requirements failed (run, check, compare --max-percent, a soak whose verdict needs attention)"),
    ("2", "usage or input error"),
    ("3", "target or environment failure"),
    ("70", "an internal error of rtvbench"),
    ("130", "interrupted by Ctrl-C or SIGTERM; every finished measurement is kept"),
)


def _text(s: str) -> str:
    """`s` as roff text: backslashes written out, and no line that roff would read as a request."""
    lines = s.replace("\\", "\\e").replace("-", "\\-").split("\n")
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line for line in lines)


def _paragraphs(help_text: str) -> str:
    # Click's `\b` marks a paragraph it must not rewrap; a man page rewraps nothing it is not told to.
    blocks = [" ".join(b.replace("\b", "").split()) for b in inspect.cleandoc(help_text).split("\n\n")]
    return "\n.PP\n".join(_text(b) for b in blocks if b)


def _options(ctx: click.Context) -> list[str]:
    out = []
    for param in ctx.command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None or isinstance(param, click.Argument):    # the usage line names the arguments
            continue
        names, help_text = record
        out += [".TP", f"\\fB{_text(names)}\\fR", _text(" ".join(help_text.split())) or "\\&"]
    return out


def _context(command: click.Command, name: str, parent: click.Context | None) -> click.Context:
    # As the command line makes it: with the command's context_settings (`-h` beside `--help`),
    # which a subcommand's context inherits.
    return command.make_context(name, [], parent=parent, resilient_parsing=True)


def _commands(ctx: click.Context, prefix: str) -> list[str]:
    group = ctx.command
    assert isinstance(group, click.Group)
    out = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = _context(command, name, ctx)
        usage = " ".join([prefix, name, *command.collect_usage_pieces(sub)])
        out += [f'.SS "{_text(usage)}"', _paragraphs(command.help or command.short_help or "")]
        out += _options(sub)
        if isinstance(command, click.Group):
            out += _commands(sub, f"{prefix} {name}")
    return out


def _installed_version() -> str:
    try:
        return version("rtvbench")
    except PackageNotFoundError:            # a source tree that was never installed
        return "unknown"


def _date() -> str:
    # SOURCE_DATE_EPOCH: the same page, byte for byte, from the same sources (reproducible builds).
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch and epoch.isdigit()
            else datetime.datetime.now(datetime.timezone.utc))
    return when.strftime("%Y-%m-%d")


def render(cli: click.Group, release: str, name: str = "rtvbench") -> str:
    """The whole page, in roff with the man macros, of rtvbench `release`."""
    ctx = _context(cli, name, None)
    summary = inspect.cleandoc(cli.help or "").split("\n\n")[0].rstrip(".")
    lines = [f'.TH {name.upper()} 1 "{_date()}" "{name} {_text(release)}" "User Commands"',
             ".SH NAME", f"{name} \\- {_text(summary[:1].lower() + summary[1:])}",
             ".SH SYNOPSIS", f".B {name}", "[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
             ".SH DESCRIPTION", _paragraphs(cli.help or ""),
             ".PP", f"Every command takes \\fB\\-\\-help\\fR; \\fB{name} \\fICOMMAND\\fB \\-\\-help\\fR "
                    "shows what this page says of it.",
             ".SH OPTIONS", *_options(ctx),
             ".SH COMMANDS", *_commands(ctx, name),
             ".SH ENVIRONMENT"]
    for var, what in ENVIRONMENT:
        lines += [".TP", f"\\fB{var}\\fR", _text(what)]
    lines.append(".SH EXIT STATUS")
    for code, what in EXIT_STATUS:
        lines += [".TP", f"\\fB{code}\\fR", _text(what)]
    lines += [".SH SEE ALSO",
              "The campaign file format, the benchmark kinds, targets and reports are described in "
              "README.md and docs/ of rtvbench's sources."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    from rtvbench.cli import cli

    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        raise SystemExit("usage: python -m rtvbench.manpage PATH [VERSION] (the rtvbench.1 to write; "
                         "default: the installed rtvbench's version)")
    path = Path(args[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(cli, args[1] if len(args) == 2 else _installed_version()), encoding="utf-8")


if __name__ == "__main__":
    main()
