"""The campaign keys of an ssh environment, checked when the campaign is read so that a mistake is
named before anything connects. SshAccess is apart because the labgrid target reaches its boards
with the same keys and an address of its own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from pydantic import ValidationInfo, field_validator, model_validator

from rtvbench.params import StrictModel, WaitS

# ssh options rtvbench sets itself: changing them would break connection sharing, make ssh
# prompt (and hang), or turn the command channel into something else.
_RESERVED = {"batchmode", "controlmaster", "controlpath", "controlpersist", "requesttty",
             "remotecommand", "sessiontype", "stdinnull", "forkafterauthentication"}
_HOST_KEY_VALUES = {"yes", "no", "off", "ask", "accept-new", "true", "false"}
_OPTION = re.compile(r"^([A-Za-z][A-Za-z0-9]*)=(\S.*)$", re.S)


class SshAccess(StrictModel):
    """How ssh reaches a board beyond its address: the keys the ssh and labgrid targets share."""

    ssh_config: Optional[str] = None
    options: list[str] = []
    workdir: Optional[str] = None

    @field_validator("ssh_config")
    @classmethod
    def _ssh_config(cls, v: str, info: ValidationInfo) -> str:
        base = Path((info.context or {}).get("base_dir") or Path.cwd())
        path = Path(v).expanduser()
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise ValueError(f"no such file: {path} (a relative path is taken from the campaign "
                             "file's directory); name an existing ssh config file")
        return str(path.resolve())

    @field_validator("options")
    @classmethod
    def _options(cls, v: list[str]) -> list[str]:
        for option in v:
            m = _OPTION.match(option)
            if not m:
                raise ValueError(f'each option must be "Key=Value" as after ssh -o, e.g. '
                                 f'"ConnectTimeout=5" (got "{option}")')
            key, value = m.group(1).lower(), m.group(2).strip().lower()
            if key in _RESERVED:
                raise ValueError(f'"{option}": rtvbench sets {m.group(1)} itself (connection '
                                 "sharing, never prompting); remove it")
            if key == "stricthostkeychecking" and value not in _HOST_KEY_VALUES:
                raise ValueError(f'"{option}": StrictHostKeyChecking must be one of yes, '
                                 "accept-new, ask, no")
        return v

    @field_validator("workdir")
    @classmethod
    def _workdir(cls, v: str) -> str:
        if not v.startswith("/") or "\n" in v:
            raise ValueError('must be an absolute directory on the target, e.g. "/tmp"')
        return v


class SshParams(SshAccess):
    host: str
    port: Optional[int] = None
    reboot_command: Optional[str] = None    # makes the environment power-cyclable (the `boot` kind)
    # The board's name when two environments reach one board at different addresses: they then
    # never measure at the same time (`rtvbench run --jobs`).
    machine: Optional[str] = None
    boot_timeout_s: Optional[WaitS] = None     # default BOOT_TIMEOUT_S, with reboot_command only

    @field_validator("reboot_command")
    @classmethod
    def _reboot_command(cls, v: str) -> str:
        if not v.strip():
            raise ValueError('must be a shell command that reboots the target, e.g. "sudo reboot"')
        return v

    @model_validator(mode="after")
    def _timeout_needs_command(self):
        if self.boot_timeout_s is not None and self.reboot_command is None:
            raise ValueError("boot_timeout_s bounds a reboot, and this environment has no reboot_command: "
                             'add one (e.g. reboot_command = "sudo reboot") or drop boot_timeout_s')
        return self

    @field_validator("host")
    @classmethod
    def _host(cls, v: str) -> str:
        if not v or v != v.strip() or any(c.isspace() for c in v) or v.startswith("-"):
            raise ValueError('must be a destination as ssh takes it, e.g. "root@board" or a Host '
                             "alias of your ssh config, without spaces or a leading '-'")
        return v

    @field_validator("machine")
    @classmethod
    def _machine(cls, v: str) -> str:
        if not v.strip() or v != v.strip():
            raise ValueError('must name the board, e.g. "board-7", without leading or trailing spaces')
        return v

    @field_validator("port")
    @classmethod
    def _port(cls, v: int) -> int:
        if isinstance(v, bool) or not 1 <= v <= 65535:
            raise ValueError("must be a TCP port number from 1 to 65535")
        return v
