"""User-facing errors and the exit code each one maps to (the exit codes listed in README.md).

Every error the user can see is raised as one of these, with a message that is one
sentence naming the input at fault and what to do; the CLI prints it and exits with
`exit_code`. Anything else escaping to the CLI is a bug in rtvbench.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_REQUIREMENTS_FAILED = 1
EXIT_INPUT = 2
EXIT_TARGET = 3
EXIT_INCONCLUSIVE = 4       # --strict: a verdict could not be decided, so the gate did not pass
EXIT_INTERRUPTED = 130      # shell convention for "stopped by SIGINT"


class RtvbenchError(Exception):
    """Base of all errors meant for the user."""

    exit_code = EXIT_TARGET

    def lines(self) -> list[str]:
        """What the CLI prints."""
        return [f"rtvbench: {self}"]


class InputError(RtvbenchError):
    """The user's input (campaign file, option, store URL) is wrong."""

    exit_code = EXIT_INPUT


class TargetError(RtvbenchError):
    """A target or the environment cannot do what the campaign needs."""

    exit_code = EXIT_TARGET


class TargetLost(TargetError):
    """The target went away during a command: the connection dropped, the guest crashed or hung.

    Only the measurement in progress is lost: the runner records it as failed, with `log`
    (the guest's serial console, the ssh diagnostics) and retries it once the target is back."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


class StoreError(RtvbenchError):
    """The result store cannot be opened or written."""

    exit_code = EXIT_TARGET


class ProbeOutputError(RtvbenchError):
    """The probe printed something that is not schema-conformant JSON Lines."""

    exit_code = EXIT_TARGET
