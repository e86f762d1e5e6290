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
#: the most files one import stores as repetitions (each is read and held until all are checked)
MAX_REPETITIONS = 1000
#: the most text of all the files of one import together (they are held until all are checked)
MAX_IMPORT_TOTAL_BYTES = 64 << 20
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


def printable_text(text: str) -> str:
    """Text as one line that TOML, the store and a message take as it is: what is not UTF-8 as
    `\\xNN`, control characters as `\\xNN` or `\\uNNNN`."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}",
                            text)


def printable_path(path: Path | str) -> str:
    """A file's name as printable_text: bytes that are not UTF-8 as `\\xNN`."""
    return printable_text(os.fsencode(path).decode("utf-8", "backslashreplace"))


def _q(text: str) -> str:
    """A TOML basic string: JSON's escapes, which TOML reads alike, non-ASCII as it is (JSON's
    surrogate pairs are not TOML)."""
    return json.dumps(printable_text(text), ensure_ascii=False)


def campaign_text(paths: list[Path], fmt: str, kind: type, record: dict, campaign: str, environment: str,
                  benchmark: str) -> str:
    """The campaign recorded with an imported run: one repetition per file."""
    names = ", ".join(printable_path(p.name) for p in paths)
    keys = {"kind": kind.kind, **kind.import_keys(fmt, record)}
    files = [printable_path(p.resolve()) for p in paths]
    where = f"file = {_q(files[0])}\n" if len(files) == 1 else f"files = [{', '.join(map(_q, files))}]\n"
    return (f"# Written by `rtvbench import`: results made elsewhere, read from {names} as {fmt}.\n"
            f"name = {_q(campaign)}\nrepetitions = {len(paths)}\n\n"
            f"[environments.{environment}]\ntarget = {_q(IMPORTED_TARGET)}\n{where}\n"
            f"[benchmarks.{benchmark}]\n" + "".join(f"{k} = {_q(v)}\n" for k, v in keys.items()))


def _read(kind: type, path: Path, fmt: str) -> tuple[str, dict]:
    shown = printable_path(path)
    text = read_input_text(path, shown, "results file", "name the file the tool wrote", MAX_IMPORT_BYTES)
    try:
        return text, kind.parse_import(fmt, text)
    except ValueError as e:
        raise InputError(f"{shown}: {e}") from None


def import_file(engine: Engine, path: Path, fmt: str, environment: str, campaign: str | None = None,
                benchmark: str | None = None, tags: dict[str, str] | None = None,
                note: str | None = None) -> int:
    """Store the results in `path` (format `fmt`) as a finished run; its id. InputError (exit 2) for
    a file that cannot be read or parsed, a format import does not read, or a bad name."""
    return import_repetitions(engine, [path], fmt, environment, campaign, benchmark, tags, note)


def import_repetitions(engine: Engine, paths: list[Path], fmt: str, environment: str, campaign: str | None = None,
                       benchmark: str | None = None, tags: dict[str, str] | None = None,
                       note: str | None = None) -> int:
    """Store the results in `paths`, each a repetition of the same measurement, as one finished
    run; its id. InputError (exit 2) as import_file, and for a file whose tool recorded other
    parameters than the first file's (another command, other options): it measured something else."""
    kinds = import_formats()
    if fmt not in kinds:
        raise InputError(f"--format {fmt!r} is not one import reads (a format whose figures a campaign "
                         f"defines, such as mapping, cannot be imported); use one of: {', '.join(kinds)}.")
    if len(paths) > MAX_REPETITIONS:
        raise InputError(f"{len(paths)} files are more than the {MAX_REPETITIONS} repetitions one import may "
                         "store; import them in parts.")
    kind = kinds[fmt]
    campaign = campaign or "imported"
    benchmark = benchmark or fmt
    for option, name in (("--environment", environment), ("--campaign", campaign), ("--benchmark", benchmark)):
        if not is_valid_name(name):
            raise InputError(f"{option} {name!r} must be a name of letters, digits, '_' and '-'.")
    read, total = [], 0
    for path in paths:
        read.append(_read(kind, path, fmt))
        total += len(read[-1][0])
        if total > MAX_IMPORT_TOTAL_BYTES:
            raise InputError(f"{printable_path(path)}: the files up to it hold more than the {MAX_IMPORT_TOTAL_BYTES:,} "
                             "characters one import reads; import them in parts.")
    first = read[0][1].get("parameters")
    for path, (_, record) in zip(paths[1:], read[1:]):
        if record.get("parameters") != first:
            theirs, ours = (json.dumps(r.get("parameters"), ensure_ascii=False)[:300] for r in (read[0][1], record))
            raise InputError(f"{printable_path(path)}: the tool recorded other parameters ({ours}) than in "
                             f"{printable_path(paths[0])} ({theirs}), so it is no repetition of the same "
                             "measurement; import it on its own.")
    c = recorded_campaign(campaign_text(paths, fmt, kind, read[0][1], campaign, environment, benchmark))
    recorder = RunRecorder.create(engine, c, tags, note)
    for repetition, (path, (text, record)) in enumerate(zip(paths, read)):
        shown = printable_path(path)
        m = recorder.start_measurement(environment=environment, load="idle", benchmark=benchmark, kind=kind.kind,
                                       repetition=repetition, attempt=1, order_index=repetition,
                                       command=["import", shown], load_commands=[])
        m.add_record(1, {"type": "output", "stdout": None, "stderr": None, "file": text, "returncode": None,
                         "imported_from": shown})
        m.add_record(2, record)
        m.finish("ok")
    recorder.set_status("finished")
    return recorder.id
