"""Host facts outside the GPU: /dev/shm, container markers, kernel (WSL2), resource limits.

Every root is a parameter so tests run against temp trees.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Substrings of /proc/1/cgroup that name a container runtime (cgroup v1 paths; v2 shows "0::/").
CGROUP_MARKERS = ("docker", "kubepods", "containerd", "libpod", "lxc")


def probe_shm(shm_path: Path) -> dict[str, Any]:
    st = os.statvfs(shm_path)
    return {"path": str(shm_path), "total_bytes": st.f_frsize * st.f_blocks, "free_bytes": st.f_frsize * st.f_bavail}


def probe_container(root: Path, proc_root: Path) -> dict[str, Any]:
    markers: list[str] = []
    for name in (".dockerenv", "run/.containerenv"):
        if (Path(root) / name).exists():
            markers.append("/" + name)
    try:
        cgroup = (Path(proc_root) / "1" / "cgroup").read_text(encoding="utf-8", errors="replace")
    except OSError:
        cgroup = ""
    hits = sorted({m for m in CGROUP_MARKERS if m in cgroup})
    markers.extend(f"cgroup:{m}" for m in hits)
    env_marker = Path(proc_root) / "1" / "environ"
    try:
        if b"container=" in env_marker.read_bytes():
            markers.append("environ:container")
    except OSError:
        pass
    return {"in_container": bool(markers), "markers": markers}


def probe_kernel(proc_root: Path) -> dict[str, Any]:
    release = (Path(proc_root) / "sys" / "kernel" / "osrelease").read_text(encoding="utf-8").strip()
    return {"release": release, "wsl": "microsoft" in release.lower()}


def _limit(value: int) -> int:
    return -1 if value == resource.RLIM_INFINITY else int(value)


def probe_limits(sys_root: Path, getrlimit: Callable[[int], tuple[int, int]] = resource.getrlimit) -> dict[str, Any]:
    memlock = getrlimit(resource.RLIMIT_MEMLOCK)
    nofile = getrlimit(resource.RLIMIT_NOFILE)
    ib_dir = Path(sys_root) / "class" / "infiniband"
    ib_devices = sorted(p.name for p in ib_dir.iterdir()) if ib_dir.is_dir() else []
    return {
        "memlock_soft": _limit(memlock[0]),
        "memlock_hard": _limit(memlock[1]),
        "nofile_soft": _limit(nofile[0]),
        "nofile_hard": _limit(nofile[1]),
        "infiniband": ib_devices,
    }
