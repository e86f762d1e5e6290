"""Text from outside rtvbench — a load's or a target's error output, a campaign's path and names, a
probe's warning — on the user's terminal: shown as the text it is.

Rich reads `[...]` as markup, so "cannot open [/dev/cpu_dma_latency]" would be a closing tag that
matches nothing (an exception that ends the run); and a terminal obeys escape sequences, so a load
or a guest could set the window title, clear the screen or write the clipboard (OSC 52). Every
string that did not come from rtvbench itself goes through `plain` before it is printed.
"""

from __future__ import annotations

import re

from rich.markup import escape

# Escape sequences (CSI and OSC, in their 7-bit and 8-bit forms; two-character ESC sequences), the C1
# controls and every C0 control but tab and newline.
_CONTROL = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
                      r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
                      r"|\x1b[@-Z\\-_]"
                      r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: object) -> str:
    """`text` as literal text for a Rich console: control sequences removed, markup escaped."""
    return escape(_CONTROL.sub("", str(text)))
