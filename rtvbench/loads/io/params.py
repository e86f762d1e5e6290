"""`kind = "io"`: workers that write a file in blocks, fsync it and read it back, in a directory
the load makes for itself."""

from __future__ import annotations

import os
from typing import Any, ClassVar

from pydantic import model_validator

from rtvbench.loads.base import LoadSite
from rtvbench.loads.probe_load import G, K, M, BlockSize, BpsLimit, ProbeLoad, ProbeLoadParams, register
from rtvbench.params import TargetDir, probe_size, size_text

FileSize = probe_size("file-size", 4 * K, G)
#: the directory an `io` load makes for itself (docs/probe/load.md, "Stopping")
DIR_PREFIX = "rtvb-load-"


class IoLoadParams(ProbeLoadParams):
    dir: TargetDir | None = None
    file_size: FileSize | None = None
    block_size: BlockSize | None = None
    fsync: bool | None = None
    drop_cache: bool | None = None
    bps_limit: BpsLimit | None = None
    OPTIONS: ClassVar[dict[str, str]] = {"dir": "--dir", "file_size": "--file-size",
                                         "block_size": "--block-size", "fsync": "--fsync",
                                         "drop_cache": "--drop-cache", "bps_limit": "--bps-limit"}

    @model_validator(mode="after")
    def _block_in_file(self):
        file_size = self.file_size if self.file_size is not None else 4 * M
        if self.block_size is not None and self.block_size > file_size:
            raise ValueError(f"block_size ({size_text(self.block_size)}) must not exceed file_size "
                             f"({size_text(file_size)})")
        return self


class IoLoad(ProbeLoad):
    def after_kill(self, meta: dict[str, Any], site: LoadSite) -> None:
        # The probe removes its directory on every path but SIGKILL; never anything but its own.
        d = (meta.get("params") or {}).get("dir")
        if isinstance(d, str) and os.path.basename(d).startswith(DIR_PREFIX):
            site.target.remove_dir(d)


register("io", IoLoadParams, IoLoad)
