"""What the probe's output means to the host: its records, checked one at a time as they arrive.

The output contract is docs/probe-output.md. Anything that does not follow it (schema.py's
rules for every record, the record order here) is rejected with a ProbeOutputError naming the
line, never guessed at, and never stored.
"""

from __future__ import annotations

from typing import Any

from rtvbench.errors import ProbeOutputError
from rtvbench.probe.schema import RecordError, parse_record

SCHEMA = 1
RECORD_TYPES = frozenset({"meta", "warning", "started", "window", "trace", "result", "end", "sysinfo", "sample"})
END_STATUSES = frozenset({"ok", "interrupted", "error"})

def _excerpt(line: str, limit: int = 80) -> str:
    return repr(line if len(line) <= limit else line[:limit] + "...")


class ProbeStream:
    """Checks the probe's JSON Lines one at a time and remembers what matters.

    feed() returns the parsed record, or raises ProbeOutputError.
    """

    def __init__(self, what: str = "probe output") -> None:
        self.what = what            # names the stream in messages
        self.count = 0
        self.meta: dict[str, Any] | None = None
        self.end: dict[str, Any] | None = None
        self.results = 0

    def _error(self, message: str, line: str) -> ProbeOutputError:
        return ProbeOutputError(f"{self.what}, line {self.count}: {message} "
                                f"(got {_excerpt(line)}); rebuild the probe with `make probe` "
                                "so that it matches this rtvbench.")

    def feed(self, line: str) -> dict[str, Any]:
        self.count += 1
        try:
            record = parse_record(line)
        except RecordError as e:
            raise self._error(str(e), line) from None
        rtype = record.get("type")
        if rtype not in RECORD_TYPES:
            raise self._error(f"unknown record type {rtype!r}", line)
        if self.meta is None and rtype != "meta":
            raise self._error("the first record must be `meta`", line)
        if rtype == "meta":
            if self.meta is not None:
                raise self._error("a second `meta` record", line)
            if record.get("schema") != SCHEMA:
                raise self._error(f"schema {record.get('schema')!r} is not the schema "
                                  f"{SCHEMA} this rtvbench understands", line)
            self.meta = record
        elif self.end is not None:
            raise self._error("a record after `end`", line)
        if rtype == "end":
            if record.get("status") not in END_STATUSES:
                raise self._error(f"unknown end status {record.get('status')!r}", line)
            self.end = record
        elif rtype == "result":
            self._check_measured_cpu(record, line)
            self.results += 1
        elif rtype == "window":
            self._check_measured_cpu(record, line)
        return record

    def _check_measured_cpu(self, record: dict[str, Any], line: str) -> None:
        """A per-CPU figure is for a CPU the measurement asked for (`meta.params.cpus`, when it lists them):
        any other would be stored and reported as `cpu<N>.*`, figures of a CPU nobody measured."""
        cpu = record.get("cpu")
        params = self.meta.get("params") if self.meta else None
        asked = params.get("cpus") if isinstance(params, dict) else None
        if not isinstance(cpu, int) or isinstance(cpu, bool) or not isinstance(asked, list) or not asked:
            return
        if cpu not in asked:
            shown = ", ".join(str(c) for c in asked[:8]) + (" ..." if len(asked) > 8 else "")
            raise self._error(f"a `{record['type']}` for CPU {cpu}, which the measurement did not ask for "
                              f"(`meta.params.cpus`: {shown})", line)
