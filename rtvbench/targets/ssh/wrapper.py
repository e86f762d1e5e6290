"""The remote side of a command run by the ssh target: a POSIX sh script (no bash, no
/proc tricks: the target may be a busybox board).

Why it exists: ssh without a terminal forwards no signals, and a dropped connection does not
kill what the session started. So the command runs under this script, which

- starts it in a process group of its own (`setsid`, from util-linux or busybox; without it,
  signals reach the command's main process only),
- reads requests from ssh's stdin, one per line: INT (to the command itself: the probe prints
  its results so far and `end`), TERM and KILL (to its whole group),
- on end of file on stdin (the host went away: connection dropped, rtvbench killed) sends
  TERM to the group (to the command's process while its group does not exist yet) every
  second while the command lives, then KILL after GRACE seconds, so that no real-time probe
  or load spins on the target with nobody listening,
- when the command ends, kills what it left behind in its group, and prints the command's
  exit status on stderr as its last line, `@rtvb-exit=N`: an ssh exit status alone cannot
  tell "the command exited 255" from "the connection was lost".

The command gets /dev/null as stdin, so that it cannot eat the requests. Being started as an
asynchronous list, it starts with SIGINT ignored (POSIX); the probe installs its own handling
of SIGINT, and anything that does not is killed with the group after the stop grace period.

Kept on one line: it travels through the remote login shell as one quoted word.
Arguments: GRACE_SECONDS COMMAND [ARGS...]
"""

from __future__ import annotations

import re
import shlex

EXIT_MARK = "@rtvb-exit="

SCRIPT = "; ".join([
    "g=$1",
    "shift",
    # fd 3 keeps the request channel; everything else reads /dev/null.
    "exec 3<&0 </dev/null",
    "if command -v setsid >/dev/null 2>&1; then setsid \"$@\" 3<&- & p=$!; t=-$p; "
    "else \"$@\" 3<&- & p=$!; t=$p; fi",
    "{ while read -r c <&3; do case $c in INT) kill -INT $p;; TERM) kill -TERM $t;; "
    "KILL) kill -KILL $t;; esac; done; "
    # Until setsid has run, the group -$p does not exist: signal it, or else the process itself,
    # for as long as the process lives (a stop that found no group used to end here, and the
    # command then ran on with nobody listening).
    "i=0; while kill -0 $p && [ $i -lt $g ]; do kill -TERM $t || kill -TERM $p; sleep 1; i=$((i+1)); done; "
    "kill -KILL $t; kill -KILL $p; } >/dev/null 2>&1 & w=$!",
    "exec 3<&-",
    "wait $p 2>/dev/null",     # no "Killed" job report among the command's own stderr
    "s=$?",
    "kill $w 2>/dev/null",
    "kill -KILL $t 2>/dev/null",
    f"printf '\\n{EXIT_MARK}%s\\n' $s >&2",
    "exit $s",
])

_MARK_LINE = re.compile(r"^" + re.escape(EXIT_MARK) + r"(\d+)$", re.M)


def remote_command(argv: list[str], grace_s: int) -> str:
    """The one string ssh hands to the remote login shell: every word quoted, so that no
    argument is ever interpreted there."""
    if not argv:
        raise ValueError("empty command")
    for arg in argv:
        if "\0" in arg:
            raise ValueError(f"a command argument contains a NUL byte: {arg!r}")
    return " ".join(["exec", "sh", "-c", shlex.quote(SCRIPT), "rtvb-wrap", str(int(grace_s)),
                     *(shlex.quote(a) for a in argv)])


def split_exit(stderr: str) -> tuple[int | None, str]:
    """(the command's exit status, or None when the wrapper did not get to report it;
    stderr without the wrapper's line)."""
    marks = list(_MARK_LINE.finditer(stderr))
    if not marks:
        return None, stderr.strip()
    last = marks[-1]
    rest = stderr[:last.start()] + stderr[last.end():]
    return int(last.group(1)), rest.strip()
