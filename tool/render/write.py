"""Put rendered files on disk without ever leaving a half-written build, or preview the change.

All files are written to a temporary folder inside the build dir first (same filesystem), then each
is renamed over its target; the lock goes last, so an interrupted swap shows up in `build --check`.
Only files this tool created (listed in the previous lock) are ever removed; anything else in the
directory (models, caches, secrets) is left alone.
"""
from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from pathlib import Path

from tqdeploy.fsutil import atomic_write_bytes
from tqdeploy.render.files import RenderedFile
from tqdeploy.render.lock import LOCK_NAME, LOCK_SCHEMA


def previous_files(out_dir: Path) -> list[str]:
    """Files the last build recorded, or [] when there is no readable lock."""
    import json

    try:
        lock = json.loads((out_dir / LOCK_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(lock, dict) or lock.get("schema") != LOCK_SCHEMA or not isinstance(lock.get("files"), dict):
        return []
    return [p for p in lock["files"] if isinstance(p, str)]


def _inside(root: Path, rel: str) -> Path | None:
    path = (root / rel).resolve()
    return path if root.resolve() in path.parents else None


def write_build(out_dir: Path, files: dict[str, RenderedFile]) -> dict[str, list[str]]:
    """Write files into out_dir; returns {"written": [...], "unchanged": [...], "removed": [...]}."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        from tqdeploy.errors import TQError

        raise TQError(f"{out_dir} exists and is not a directory", "choose another --out directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    stale = [p for p in previous_files(out_dir) if p not in files]
    report: dict[str, list[str]] = {"written": [], "unchanged": [], "removed": []}
    staging = Path(tempfile.mkdtemp(prefix=".tqdeploy-staging-", dir=out_dir))
    try:
        for rel, f in files.items():
            atomic_write_bytes(staging / rel, f.data, mode=f.mode)
        order = [r for r in files if r != LOCK_NAME] + [LOCK_NAME]
        for rel in order:
            target = out_dir / rel
            if target.is_file() and target.read_bytes() == files[rel].data \
                    and (target.stat().st_mode & 0o777) == files[rel].mode:
                report["unchanged"].append(rel)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, target)
            report["written"].append(rel)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for rel in stale:
        path = _inside(out_dir, rel)
        if path is not None and path.is_file():
            path.unlink()
            report["removed"].append(rel)
            _prune_empty_dirs(path.parent, out_dir)
    return report


def _prune_empty_dirs(folder: Path, root: Path) -> None:
    root = root.resolve()
    folder = folder.resolve()
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def diff_build(out_dir: Path, files: dict[str, RenderedFile]) -> str:
    """Unified diff from what is in out_dir to what a build would write (empty: no change)."""
    out_dir = Path(out_dir)
    chunks: list[str] = []
    names = sorted(set(files) | set(previous_files(out_dir)))
    for rel in names:
        target = out_dir / rel
        old = target.read_bytes() if target.is_file() else None
        new = files[rel].data if rel in files else None
        if old == new:
            continue
        chunks.extend(difflib.unified_diff(
            _lines(old), _lines(new),
            fromfile=f"a/{rel}" if old is not None else "/dev/null",
            tofile=f"b/{rel}" if new is not None else "/dev/null",
        ))
    return "".join(chunks)


def _lines(data: bytes | None) -> list[str]:
    if data is None:
        return []
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
