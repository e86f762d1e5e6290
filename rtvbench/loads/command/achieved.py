"""What a `command` load achieved: an external tool prints no records rtvbench reads; the CPU
usage from /proc/stat shows what it did."""

from __future__ import annotations

from rtvbench.analysis.load_figures import LoadFigures, register
from rtvbench.spec import LoadSpec


@register("command")
class CommandFigures(LoadFigures):
    no_record = "external command: no figures of its own, see the CPU usage"

    def definition(self, spec: LoadSpec) -> str:
        return f"external command `{' '.join(spec.commands)}`" + (
            f", running in environment `{spec.where}` (measured here, loaded there)" if spec.where != "same" else "")
