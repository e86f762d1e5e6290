"""Text from outside rtvbench — a load's or a target's error output, a campaign's path and names, a
probe's warning — on the user's terminal: shown as the text it is.

Rich reads `[...]` as markup, so "cannot open [/dev/cpu_dma_latency]" would be a closing tag that
matches nothing (an exception that ends the run); and a terminal obeys escape sequences, so a load
or a guest could set the window title, clear the screen or write the clipboard (OSC 52). Every
string that did not come from rtvbench itself goes through `plain` before it is printed.
"""

from __future__ import annotations

import re
from typing import Any

# Escape sequences (CSI and OSC, in their 7-bit and 8-bit forms; two-character ESC sequences), the C1
# controls and every C0 control but tab and newline.
_CONTROL = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
                      r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
                      r"|\x1b[@-Z\\-_]"
                      r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def without_controls(text: object) -> str:
    """`text` with its control sequences removed, for a line printed without Rich."""
    return _CONTROL.sub("", str(text))


def plain(text: object) -> str:
    """`text` as literal text for a Rich console: control sequences removed, markup escaped."""
    from rich.markup import escape
    return escape(without_controls(text))


class LazyConsole:
    """A Rich console made when it first prints: importing Rich is a tenth of a second's start-up, which
    a command that prints a plain line or nothing (`validate`, `--help`) does not pay."""

    def __init__(self, **options: Any) -> None:
        self._options, self._console = options, None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console
            self._console = Console(**self._options)
        return getattr(self._console, name)
