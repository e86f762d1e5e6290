"""The `json_path` of a mapping figure: a JMESPath expression (jmespath.org) over a tool's output
read as JSON, run with a budget.

The output is untrusted and may be 16 MiB; the expression is the campaign's. JMESPath's own
interpreter is linear in the document for one pass, but a pipe of flattens doubles a list at every
stage (`@ | [@, @][] | [@, @][] ...`) and `to_string` or `join` of a list of the whole document
copies it as often as the list names it, so an expression of a few hundred characters could ask for
gigabytes. The interpreter here counts its work instead: every node it visits and every element a
flatten, a slice or a function copies is a step, and an expression that takes more than MAX_STEPS
over one output stops with a FormatError. `to_string` and `join`, which make text out of the
document and never a number, are refused when the campaign is read.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jmespath
import jmespath.exceptions
import jmespath.functions
import jmespath.parser
import jmespath.visitor

# Longer than any path into a tool's output; a parser's recursion stays far from Python's limit.
MAX_EXPRESSION = 500
# Deeper than any sensible expression, and each level is a few frames of the interpreter's recursion.
MAX_NESTING = 100
# A few passes over the largest document the formats read (MAX_JSON_CONTAINERS and its scalars):
# seconds of CPU at worst.
MAX_STEPS = 10_000_000
# Functions that make text out of the document (a copy of it per reference), never a number.
REFUSED_FUNCTIONS = ("to_string", "join")

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OLD_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


class PathFailed(Exception):
    """The expression could not be run over this output (past MAX_STEPS, a function given a value
    of another type): its text says why, in a few words whatever the output."""


def _old_parts(path: str) -> list[str | int] | None:
    """The dotted path with `[index]` parts mapping figures took before JMESPath (`a.b[0].c`), as
    ["a", "b", 0, "c"]; None when `path` is not one."""
    parts: list[str | int] = []
    pos = 0
    while pos < len(path):
        if path[pos] == "." and parts and pos + 1 < len(path) and path[pos + 1] != "[":
            pos += 1
        m = _OLD_PART.match(path, pos)
        if not m:
            return None
        parts.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    return parts or None


def jmespath_spelling(path: str) -> str | None:
    """An old dotted path written as JMESPath (keys that are not identifiers quoted, as in
    `end."sum-sent".bytes`), None when `path` is not an old dotted path."""
    parts = _old_parts(path)
    if parts is None:
        return None
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + (p if _IDENTIFIER.match(p) else json.dumps(p))
    return out


def _reason(e: jmespath.exceptions.JMESPathError) -> str:
    what = getattr(e, "message", None) or getattr(e, "msg", None) or str(e)
    if what == "Invalid jmespath expression":
        what = "it ends too early"
    where = getattr(e, "lex_position", None)
    return f"{what} at column {where}" if isinstance(where, int) else what


def _calls_and_depth(node: Any, depth: int = 0) -> tuple[set[tuple[str, int]], int]:
    """The functions the parsed expression calls (with their numbers of arguments) and how deep
    its tree is."""
    if not isinstance(node, dict):
        return set(), depth
    called = ({(node["value"], len(node["children"]))} if node.get("type") == "function_expression"
              else set())
    deepest = depth
    for child in node.get("children", ()):
        if depth + 1 > MAX_NESTING:
            return called, depth + 1
        more, d = _calls_and_depth(child, depth + 1)
        called |= more
        deepest = max(deepest, d)
    return called, deepest


def compile_path(path: str) -> jmespath.parser.ParsedResult:
    """`path` compiled; ValueError saying what is wrong with it (for an old dotted path JMESPath
    reads otherwise, its JMESPath spelling)."""
    if len(path) > MAX_EXPRESSION:
        raise ValueError(f"is {len(path)} characters long, more than the {MAX_EXPRESSION} a path may be")
    try:
        compiled = jmespath.compile(path)
    except jmespath.exceptions.JMESPathError as e:
        new = jmespath_spelling(path)
        if new is not None and new != path:
            raise ValueError(f"is read as JMESPath, where a key that is not an identifier is quoted: "
                             f"write it '{new}'") from None
        raise ValueError(f"is not a JMESPath expression ({_reason(e)}); e.g. \"end.streams[0].sender.bytes\" "
                         "or \"max(results[*].mean)\"") from None
    except RecursionError:
        raise ValueError(f"nests more than {MAX_NESTING} levels deep") from None
    called, depth = _calls_and_depth(compiled.parsed)
    if depth > MAX_NESTING:
        raise ValueError(f"nests more than {MAX_NESTING} levels deep")
    table = jmespath.functions.Functions().FUNCTION_TABLE
    names = {name for name, _ in called}
    unknown = sorted(names - set(table))
    if unknown:
        raise ValueError(f"calls {', '.join(unknown)}, which JMESPath has no function of that name for")
    refused = sorted(names & set(REFUSED_FUNCTIONS))
    if refused:
        raise ValueError(f"calls {', '.join(refused)}, which makes text out of the output, not a number; "
                         "leave it out (a numeric string is read as its number)")
    for name, given in sorted(called):
        signature = table[name]["signature"]
        variadic = bool(signature) and signature[-1].get("variadic", False)
        if given < len(signature) or (given > len(signature) and not variadic):
            takes = f"{len(signature)}{' or more' if variadic else ''}"
            raise ValueError(f"gives {name}() {given} argument{'s' * (given != 1)}; it takes {takes}")
    return compiled


class _BudgetedInterpreter(jmespath.visitor.TreeInterpreter):
    def __init__(self) -> None:
        super().__init__()
        self.steps = 0

    def _spend(self, n: int) -> None:
        self.steps += n
        if self.steps > MAX_STEPS:
            raise PathFailed()

    def visit(self, node, *args, **kwargs):
        self._spend(1)
        return super().visit(node, *args, **kwargs)

    def visit_flatten(self, node, value):
        base = self.visit(node["children"][0], value)
        if isinstance(base, list):
            self._spend(sum(len(e) if isinstance(e, list) else 1 for e in base))
        return super().visit_flatten({"type": "flatten", "children": [{"type": "literal", "value": base}]},
                                     value)

    def visit_slice(self, node, value):
        if isinstance(value, list):
            self._spend(len(value))
        return super().visit_slice(node, value)

    def visit_function_expression(self, node, value):
        args = [self.visit(child, value) for child in node["children"]]
        self._spend(sum(len(a) for a in args if isinstance(a, (list, dict, str))))
        return self._functions.call_function(node["value"], args)


def search(compiled: jmespath.parser.ParsedResult, data: Any) -> Any:
    """What `compiled` finds in `data`; PathFailed when it cannot."""
    try:
        return _BudgetedInterpreter().visit(compiled.parsed, data)
    except PathFailed:
        raise PathFailed(f"takes more than {MAX_STEPS:,} steps over the output") from None
    except RecursionError:
        raise PathFailed("nests deeper than rtvbench can follow") from None
    except jmespath.exceptions.JMESPathTypeError as e:
        raise PathFailed(f"gives {e.function_name}() {e.actual_type} where it takes "
                         f"{' or '.join(map(str, e.expected_types))}") from None
    except jmespath.exceptions.JMESPathError as e:
        raise PathFailed(_reason(e)[:200]) from None
