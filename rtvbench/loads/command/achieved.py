"""What a `command` load achieved: an external tool prints no records rtvbench reads; the CPU
usage from /proc/stat shows what it did."""

from __future__ import annotations

from rtvbench.analysis.load_figures import LoadFigures, register


@register("command")
class CommandFigures(LoadFigures):
    no_record = "external command: no figures of its own, see the CPU usage"
