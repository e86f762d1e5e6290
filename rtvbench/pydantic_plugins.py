"""The command line's pydantic looks for no plugins.

pydantic looks for plugins among every installed distribution's entry points the first time it builds
a validator (reading every distribution's metadata, a few ms of each start-up). rtvbench's models use
none, so the command line sets PYDANTIC_DISABLE_PLUGINS, unless the user set it. pydantic then looks
for none, but its plugin loader still imports importlib.metadata (and with it email, zipfile and csv) at
the top of its module: about 40 ms of every command that validates anything, as long as an interpreter
takes to start. When every plugin is disabled the loader can only answer "none", so rtvbench gives
pydantic a loader that answers so without that import. A user who enables some plugins (any other value
of the variable) gets pydantic's own loader.

pydantic's validator factory imports get_plugins, and only that, from the loader when it builds its
first validator; tests/test_quick_commands.py fails on a pydantic that imports more.
"""

from __future__ import annotations

import os
import sys
import types

LOADER = "pydantic.plugin._loader"
#: the values with which pydantic's own loader returns no plugin at all
ALL_DISABLED = ("__all__", "1", "true")


def look_for_none() -> None:
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] not in ALL_DISABLED or LOADER in sys.modules:
        return
    loader = types.ModuleType(LOADER, "pydantic's plugin loader while every plugin is disabled: no plugins")
    loader.get_plugins = lambda: ()
    sys.modules[LOADER] = loader
