"""Put rendered files on disk without ever leaving a half-written build, or preview the change.

All files are written to a temporary folder inside the build dir first (same filesystem), then each
is renamed over its target; the lock goes last, so an interrupted swap shows up in `build --check`.
Only files whose current bytes are what this tool wrote (render/guard.py) are ever replaced or removed;
anything else in the directory (models, caches, secrets, hand edits) is left alone, or with --force backed
up first. One build writes into a directory at a time.
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from pathlib import Path

from tqdeploy.errors import TQError
from tqdeploy.fsutil import atomic_write_bytes, exclusive_dir
from tqdeploy.render.files import RenderedFile
from tqdeploy.render.guard import back_up, guard, refusal, refuse_system_dir
from tqdeploy.render.lock import LOCK_NAME
from tqdeploy.render.owner import other_deployment

STAGING_PREFIX = ".tqdeploy-staging-"


def _inside(root: Path, rel: str) -> Path | None:
    path = (root / rel).resolve()
    return path if root.resolve() in path.parents else None


def check_targets(out_dir: Path, files: dict[str, RenderedFile]) -> None:
    """Refuse, before anything is written, a build dir whose paths cannot take the rendered files:
    a file where a folder is needed, a folder (or anything else) where a file goes, or a symlinked
    folder that would send a file outside the build dir."""
    out_dir = Path(out_dir)
    for parent in (out_dir, *out_dir.parents):
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise TQError(
                    f"{parent} exists and is not a directory, so {out_dir} cannot be created",
                    "choose another --out directory",
                )
            break
    if not out_dir.is_dir():
        return
    root = out_dir.resolve()
    for rel in files:
        target = out_dir / rel
        for folder in reversed(Path(rel).parents[:-1]):  # k8s, monitoring: folders inside the build dir
            where = out_dir / folder
            if where.is_symlink() or (where.exists() and not where.is_dir()):
                raise TQError(
                    f"{where} is in the way: the build writes {rel} there and it is "
                    f"{'a symlink' if where.is_symlink() else 'not a directory'}",
                    f"move {where} out of {out_dir}, or choose another --out directory",
                )
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise TQError(
                f"{target} is in the way: the build writes a file there and it is "
                f"{'a symlink' if target.is_symlink() else 'a directory or special file'}",
                f"move {target} out of {out_dir}, or choose another --out directory",
            )
        if root not in target.resolve().parents:
            raise TQError(f"{target} resolves outside {out_dir}", "choose another --out directory")


def write_build(
    out_dir: Path,
    files: dict[str, RenderedFile],
    force: bool = False,
    *,
    take_over: bool = False,
    spec_must_match: bool = False,
) -> dict[str, list[str]]:
    """Write files into out_dir; returns {"written", "unchanged", "removed", "kept", "backup"} lists.

    A folder that holds another deployment (render/owner.py) is refused unless take_over; spec_must_match:
    a spec hash other than the lock's is another deployment too (an embedded spec).

    Files tqdeploy did not write (or that were edited since) are refused before anything is written,
    unless force: then they are copied into a backup folder first (render/guard.py).

    A build dir that cannot take the files is refused before anything is written (check_targets);
    an OS error while staging leaves the build dir as it was; one while swapping files in is reported
    with the advice to rebuild (the lock goes last, so `build --check` names what was left behind).
    """
    out_dir = Path(out_dir)
    refuse_system_dir(out_dir)
    check_targets(out_dir, files)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise TQError(
            f"cannot write into {out_dir}: {err.strerror or err}", "choose a writable --out directory"
        ) from None
    busy = TQError(f"another tqdeploy build is writing into {out_dir}", "wait for it to finish, then run again")
    with exclusive_dir(out_dir, busy):  # one build at a time per directory
        if not take_over:  # under the lock: the folder's owner cannot change between this look and the swap
            refused = other_deployment(out_dir, files[LOCK_NAME].data, spec_must_match=spec_must_match)
            if refused is not None:
                raise refused
        return _write_locked(out_dir, files, force)


def _write_locked(out_dir: Path, files: dict[str, RenderedFile], force: bool) -> dict[str, list[str]]:
    guarded = guard(out_dir, {rel: f.data for rel, f in files.items()})  # under the lock: no build races it
    if guarded.conflicts and not force:
        raise refusal(out_dir, guarded.conflicts)
    backup = back_up(out_dir, guarded.conflicts) if guarded.conflicts else None
    try:
        _remove_old_staging(out_dir)  # safe under the lock: no other build is staging here
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out_dir))
    except OSError as err:
        raise TQError(
            f"cannot write into {out_dir}: {err.strerror or err}", "choose a writable --out directory"
        ) from None
    stale = guarded.removable + [r for r in guarded.conflicts if r not in files]  # conflicts: backed up (force)
    report: dict[str, list[str]] = {"written": [], "unchanged": [], "removed": [], "kept": guarded.kept}
    if backup:
        report["backup"] = [backup]
    try:
        try:
            for rel, f in files.items():
                atomic_write_bytes(staging / rel, f.data, mode=f.mode)
        except OSError as err:
            raise TQError(
                f"cannot stage the build in {out_dir}: {err.strerror or err}; nothing was changed",
                "free disk space or choose a writable --out directory",
            ) from None
        order = [r for r in files if r != LOCK_NAME] + [LOCK_NAME]
        for rel in order:
            target = out_dir / rel
            if (
                target.is_file()
                and target.read_bytes() == files[rel].data
                and (target.stat().st_mode & 0o777) == files[rel].mode
            ):
                report["unchanged"].append(rel)
                continue
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / rel, target)
            except OSError as err:
                raise TQError(
                    f"cannot put {rel} in place in {out_dir}: {err.strerror or err}; "
                    f"written so far: {', '.join(report['written']) or 'nothing'}",
                    "fix the cause and run `tqdeploy build` again (`tqdeploy build --check` "
                    "names the files left behind)",
                ) from None
            report["written"].append(rel)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for rel in stale:
        path = _inside(out_dir, rel)
        if path is not None and path.is_file() and not path.is_symlink():
            path.unlink()
            report["removed"].append(rel)
            _prune_empty_dirs(path.parent, out_dir)
    return report


def _remove_old_staging(out_dir: Path) -> None:
    """Staging folders an interrupted build left behind (ours by name; nothing else is touched)."""
    for old in out_dir.glob(STAGING_PREFIX + "*"):
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)


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
    refuse_system_dir(out_dir)
    check_targets(out_dir, files)  # a dry run refuses what the real build would refuse
    chunks: list[str] = []
    removable = guard(out_dir, {rel: f.data for rel, f in files.items()})
    names = sorted(set(files) | {r for r in removable.removable + removable.conflicts})
    for rel in names:
        target = out_dir / rel
        old = target.read_bytes() if target.is_file() else None
        new = files[rel].data if rel in files else None
        if old == new:
            continue
        chunks.extend(
            difflib.unified_diff(
                _lines(old),
                _lines(new),
                fromfile=f"a/{rel}" if old is not None else "/dev/null",
                tofile=f"b/{rel}" if new is not None else "/dev/null",
            )
        )
    return "".join(chunks)


def _lines(data: bytes | None) -> list[str]:
    if data is None:
        return []
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
