"""Which files a build may replace or remove: only those whose current bytes are what tqdeploy wrote.

The previous lock records the sha256 of every file the last build wrote. A file on disk may be replaced
when its bytes still match that hash (or already equal the new bytes); anything else (the user's own
Dockerfile in a folder never built into, a rendered file edited by hand, a hand-written tqdeploy.toml)
is a conflict: the build is refused with the list, and `--force` replaces them after a backup.
A stale file (in the lock, not rendered now) is removed only when its name is one a build renders and
its bytes match the lock: a lock that lists models/w.safetensors, ../x or /etc/passwd deletes nothing.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.render.lock import LOCK_NAME, LOCK_SCHEMA

# Every path a build can render (render/files.py template_plan, the spec copy and the lock); a test keeps
# it in step with template_plan. Nothing outside this set is ever replaced or removed.
RENDERABLE = frozenset(
    {
        "Dockerfile",
        "serve.sh",
        "healthcheck.sh",
        "readyprobe.py",
        "warmup.sh",
        "launch_vllm.py",
        "multinode.sh",
        "multinode.json",
        "nginx.conf",
        "monitoring/prometheus.yml",
        "monitoring/grafana-dashboard.json",
        "compose.yaml",
        "download.sh",
        "gpustack-backend.yaml",
        "k8s/deployment.yaml",
        "k8s/leaderworkerset.yaml",
        "k8s/service.yaml",
        "k8s/pvc.yaml",
        "k8s/warmup-job.yaml",
        "tqdeploy.toml",
        LOCK_NAME,
    }
)
# Top-level system folders a build must never write into (an `--out /etc` is a typo, not a deployment).
_SYSTEM_DIRS = frozenset("/ /bin /boot /dev /etc /lib /lib32 /lib64 /proc /root /run /sbin /sys /usr /var".split())
BACKUP_PREFIX = ".tqdeploy-backup-"
MAX_LOCK_BYTES = 1 << 20


@dataclass
class Guarded:
    """What a build may do in out_dir: files to back up before replacing/removing, stale files to remove."""

    conflicts: list[str] = field(default_factory=list)  # existing files whose bytes tqdeploy did not write
    removable: list[str] = field(default_factory=list)  # stale rendered files still as tqdeploy wrote them
    kept: list[str] = field(default_factory=list)  # lock entries a build never removes (not renderable, edited)


def refuse_system_dir(out_dir: Path) -> None:
    where = str(Path(out_dir).expanduser().resolve())
    if where in _SYSTEM_DIRS:
        raise TQError(
            f"--out {out_dir} is {where}: a build writes {len(RENDERABLE)} files there",
            "choose a folder of its own, e.g. --out build",
        )


def _sha256(path: Path) -> str | None:
    try:
        if not path.is_file() or path.is_symlink():
            return None
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def previous_lock(out_dir: Path) -> dict[str, Any] | None:
    """The lock in out_dir as JSON; None when there is none; TQError when one is there but is not ours."""
    path = out_dir / LOCK_NAME
    if not path.exists() and not path.is_symlink():
        return None
    try:
        if not path.is_file() or path.stat().st_size > MAX_LOCK_BYTES:
            raise ValueError("not a regular file of at most 1 MiB")
        lock: dict[str, Any] | None = json.loads(path.read_text(encoding="utf-8"))
        files = lock["files"] if isinstance(lock, dict) and lock.get("schema") == LOCK_SCHEMA else None
        if not isinstance(files, dict):
            raise ValueError(f"not a {LOCK_SCHEMA} lock")
    except (OSError, ValueError, KeyError, RecursionError) as err:
        raise TQError(
            f"{path} is not a lock this tool wrote ({err}), so no file in {out_dir} is known to be tqdeploy's",
            f"move {path} away (or pass --force to replace every file after a backup)",
        ) from None
    return lock


def lock_hashes(out_dir: Path) -> dict[str, str] | None:
    """{path: sha256} of the previous lock; None when there is no lock; TQError when one is there but unreadable."""
    lock = previous_lock(out_dir)
    if lock is None:
        return None
    return {k: v for k, v in lock["files"].items() if isinstance(k, str) and isinstance(v, str)}


def guard(out_dir: Path, new: dict[str, bytes]) -> Guarded:
    """Classify every existing file the build would touch (see the module doc)."""
    out_dir = Path(out_dir)
    result = Guarded()
    if not out_dir.is_dir():
        return result
    try:
        hashes = lock_hashes(out_dir)
    except TQError:
        hashes = {}
        if (out_dir / LOCK_NAME).exists():
            result.conflicts.append(LOCK_NAME)
    ours = hashes or {}
    for rel, data in new.items():
        if rel == LOCK_NAME:
            continue
        now = _sha256(out_dir / rel)
        if now is None or now == hashlib.sha256(data).hexdigest():
            continue  # absent, or already the bytes this build writes
        if ours.get(rel) != now:
            result.conflicts.append(rel)
    for rel, digest in sorted(ours.items()):
        if rel not in new:
            _classify_stale(out_dir, rel, digest, result)
    return result


def _classify_stale(out_dir: Path, rel: str, digest: str, result: Guarded) -> None:
    if rel not in RENDERABLE:
        result.kept.append(rel)  # never a build's file: a hand-edited lock must not delete the weights
        return
    now = _sha256(out_dir / rel)
    if now is None:
        return
    (result.removable if now == digest else result.conflicts).append(rel)


def refusal(out_dir: Path, conflicts: list[str]) -> TQError:
    shown = ", ".join(conflicts[:20]) + (f" and {len(conflicts) - 20} more" if len(conflicts) > 20 else "")
    return TQError(
        f"{out_dir} holds files tqdeploy did not write (or that were edited since): {shown}; nothing was changed",
        "move them away, build into another --out, or pass --force to replace them "
        f"(the old files are kept in {out_dir}/{BACKUP_PREFIX}<time>/)",
    )


def back_up(out_dir: Path, rels: list[str]) -> str | None:
    """Copy rels into a fresh backup folder inside out_dir; its name, or None when there was nothing to keep."""
    present = [r for r in rels if (out_dir / r).is_file()]
    if not present:
        return None
    folder = out_dir / f"{BACKUP_PREFIX}{time.strftime('%Y%m%dT%H%M%S')}-{time.time_ns() % 10**9:09d}"
    try:
        for rel in present:
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(out_dir / rel, folder / rel)
    except OSError as err:
        raise TQError(
            f"cannot back up the files --force replaces into {folder}: {err.strerror or err}; nothing was changed",
            "free disk space, or move the files away yourself",
        ) from None
    return folder.name
