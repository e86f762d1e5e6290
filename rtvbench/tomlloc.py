"""Map a dotted key path of a TOML document to the line that defines it.

tomllib returns plain dicts without positions, but campaign errors must name the
line. A full TOML parser with positions would be overkill: a campaign file is flat
tables and `key = value` lines, so scanning the text for table headers and key
assignments is enough. Anything the scan cannot pin down (inline tables, values
inside multi-line arrays) falls back to the nearest enclosing key or table line.
"""

from __future__ import annotations

import re



_HEADER = re.compile(r"^\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")
_PART = re.compile(r"""\s*([A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')\s*(?:\.|$)""")


def _split_key(text: str) -> tuple[str, ...]:
    """Split a dotted TOML key (`a."b.c".d`) into its parts, unquoted."""
    parts = []
    for m in _PART.finditer(text.strip()):
        p = m.group(1)
        if p[:1] in "\"'":
            p = p[1:-1]
        parts.append(p)
    return tuple(parts)


class TomlLocator:
    """Line numbers (1-based) of the tables and keys of one TOML text."""

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple, int] = {}
        array_counts: dict[tuple, int] = {}
        table: tuple = ()
        in_multiline: str | None = None
        for lineno, line in enumerate(text.splitlines(), start=1):
            # Lines inside a multi-line string are values, never keys or headers.
            if in_multiline:
                if line.count(in_multiline) % 2 == 1:
                    in_multiline = None
                continue
            header = _HEADER.match(line)
            if header and not _KEY.match(line):
                path = _split_key(header.group(2))
                if header.group(1) == "[[":
                    # The n-th [[requirements]] is element n of the list.
                    n = array_counts.get(path, 0)
                    array_counts[path] = n + 1
                    table = path + (n,)
                else:
                    table = path
                self.lines.setdefault(table, lineno)
                continue
            key = _KEY.match(line)
            if key:
                full = table + _split_key(key.group(1))
                self.lines.setdefault(full, lineno)
                # Dotted keys also define their intermediate tables.
                for i in range(len(table) + 1, len(full)):
                    self.lines.setdefault(full[:i], lineno)
                rest = line[key.end():]
                for quote in ('"""', "'''"):
                    if rest.count(quote) % 2 == 1:
                        in_multiline = quote

    def line_of(self, path: tuple) -> int | None:
        """The line of `path`, else of its nearest enclosing key/table, else None."""
        path = tuple(path)
        for n in range(len(path), 0, -1):
            if path[:n] in self.lines:
                return self.lines[path[:n]]
        return None


def format_path(path: tuple) -> str:
    """`("requirements", 2, "max")` -> `requirements[2].max`."""
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out
