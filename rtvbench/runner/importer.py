"""`rtvbench import`: results an external tool made elsewhere, stored as a run of their own.

The benchmark kind that lists the format among its `import_formats` parses the file with the
parsers its measurements use, and it is stored as one finished run of one measurement: a campaign
rtvbench writes itself (its text says where the results came from), one environment of target kind
"imported" (a machine rtvbench did not reach: no fingerprint), one benchmark of that kind, and the
file's text kept verbatim beside the figures so that it can be parsed again. `report`, `compare`
and `history` then read it like any run.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from sqlalchemy import Engine

from rtvbench.benchmarks import BENCHMARKS
from rtvbench.campaign.reader import read_input_text, recorded_campaign
from rtvbench.errors import InputError
from rtvbench.params import is_valid_name
from rtvbench.store.writer import RunRecorder

#: larger than any tool's summary (a bigger file is most likely the wrong one), and as much as the
#: parsers read of one output (they refuse more)
MAX_IMPORT_BYTES = 16 << 20
#: the target kind of an imported environment, which no rtvbench reaches
IMPORTED_TARGET = "imported"


def import_formats() -> dict[str, type]:
    """Every format `rtvbench import` reads -> the benchmark kind (class) that reads it."""
    out = {}
    for name in BENCHMARKS.names():
        cls = BENCHMARKS.get(name)
        out.update({fmt: cls for fmt in getattr(cls, "import_formats", ())})
    return out


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def printable_path(path: Path | str) -> str:
    """A file's name as text of one line that TOML, the store and a message take as it is: bytes
    that are not UTF-8 as `\\xNN`, control characters as `\\xNN` or `\\uNNNN`."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}",
                            text)


def campaign_text(path: Path, fmt: str, kind: type, campaign: str, environment: str, benchmark: str) -> str:
    """The campaign recorded with an imported run; strings as JSON, which TOML's basic strings read alike."""
    q = json.dumps
    name = printable_path(path.name)
    keys = {"kind": kind.kind, **kind.import_keys(fmt, name)}
    return (f"# Written by `rtvbench import`: results made elsewhere, read from {name} as {fmt}.\n"
            f"name = {q(campaign)}\nrepetitions = 1\n\n"
            f"[environments.{environment}]\ntarget = {q(IMPORTED_TARGET)}\nfile = {q(printable_path(path.resolve()))}\n\n"
            f"[benchmarks.{benchmark}]\n" + "".join(f"{k} = {q(v)}\n" for k, v in keys.items()))


def import_file(engine: Engine, path: Path, fmt: str, environment: str, campaign: str | None = None,
                benchmark: str | None = None, tags: dict[str, str] | None = None,
                note: str | None = None) -> int:
    """Store the results in `path` (format `fmt`) as a finished run; its id. InputError (exit 2) for
    a file that cannot be read or parsed, a format import does not read, or a bad name."""
    kinds = import_formats()
    if fmt not in kinds:
        raise InputError(f"--format {fmt!r} is not one import reads (a format whose figures a campaign "
                         f"defines, such as mapping, cannot be imported); use one of: {', '.join(kinds)}.")
    kind = kinds[fmt]
    campaign = campaign or "imported"
    benchmark = benchmark or fmt
    for option, name in (("--environment", environment), ("--campaign", campaign), ("--benchmark", benchmark)):
        if not is_valid_name(name):
            raise InputError(f"{option} {name!r} must be a name of letters, digits, '_' and '-'.")
    shown = printable_path(path)
    text = read_input_text(path, shown, "results file", "name the file the tool wrote", MAX_IMPORT_BYTES)
    try:
        record = kind.parse_import(fmt, text)
    except ValueError as e:
        raise InputError(f"{shown}: {e}") from None
    c = recorded_campaign(campaign_text(path, fmt, kind, campaign, environment, benchmark))
    recorder = RunRecorder.create(engine, c, tags, note)
    m = recorder.start_measurement(environment=environment, load="idle", benchmark=benchmark, kind=kind.kind,
                                   repetition=0, attempt=1, order_index=0, command=["import", shown],
                                   load_commands=[])
    m.add_record(1, {"type": "output", "stdout": None, "stderr": None, "file": text, "returncode": None,
                     "imported_from": shown})
    m.add_record(2, record)
    m.finish("ok")
    recorder.set_status("finished")
    return recorder.id
