"""The environment a timed command runs in: Python's compiled bytecode cached, as an installed
rtvbench has it after its first run, but in a directory of the bench's own instead of the checkout.
Compiling every module from source on each start (PYTHONDONTWRITEBYTECODE, as CI shells set it)
measures the compiler, about 0.1 s of a report, not rtvbench."""

from __future__ import annotations

import os
from pathlib import Path


def cached_bytecode_env(directory: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(directory)
    return env
