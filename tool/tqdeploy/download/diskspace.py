"""Refuse a download that would not fit, before any weight is fetched.

Margin: max(1 GiB, 2% of what is still to download). Partial files sit on the same filesystem as
the final paths and are renamed into place, so the download itself needs no second copy; the
margin keeps the disk from filling to the last byte, where everything else writing there (vLLM's
compile cache under VLLM_CACHE_ROOT, logs, the manifest rewritten after each file) starts failing
with ENOSPC. shutil.disk_usage reports the space available to this user (statvfs f_bavail), so
root-reserved blocks are already left out.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from tqdeploy.errors import EXIT_FINDINGS, TQError
from tqdeploy.units import GiB

MARGIN_FLOOR = 1 * GiB
MARGIN_FRACTION = 0.02


class Usage(NamedTuple):
    total: int
    used: int
    free: int


DiskUsage = Callable[[str], Any]  # shutil.disk_usage, or a stand-in returning a Usage


def margin_for(needed: int) -> int:
    return max(MARGIN_FLOOR, int(needed * MARGIN_FRACTION))


def gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB"


@dataclass(frozen=True)
class RoomCheck:
    needed: int
    margin: int
    free: int

    @property
    def fits(self) -> bool:
        return self.free >= self.needed + self.margin


def existing_parent(path: Path) -> Path:
    """The nearest folder that exists: the target may not be created yet."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_room(dest: Path, needed: int, disk_usage: DiskUsage = shutil.disk_usage) -> RoomCheck:
    free = disk_usage(str(existing_parent(dest))).free
    return RoomCheck(needed=needed, margin=margin_for(needed), free=free)


def ensure_room(dest: Path, needed: int, disk_usage: DiskUsage = shutil.disk_usage) -> RoomCheck:
    """Raise a TQError naming both figures when ``needed`` bytes (+ margin) do not fit at ``dest``."""
    check = check_room(dest, needed, disk_usage)
    if not check.fits:
        short = check.needed + check.margin - check.free
        raise TQError(
            f"not enough disk at {dest}: the download needs {gb(check.needed)} + {gb(check.margin)} margin,"
            f" {gb(check.free)} is free",
            f"download elsewhere with --to DIR, or free {gb(short)} there",
            exit_code=EXIT_FINDINGS,
        )
    return check
