"""`tqdeploy demo-model --to DIR`: a copy of the cached checkpoint where a build's serve.sh expects it.

A copy, not a link: the build folder may be mounted into a container, or edited, and neither may reach the
cache. Written into a temp folder beside DIR and renamed into place when its manifest verifies. DIR is
replaced only when it is empty or when it is our own copy, unchanged as its manifest says (also one of an
older converter), so nothing of the user's is lost; anything else there is refused.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tqdeploy.demomodel.manifest import MANIFEST, problem
from tqdeploy.errors import TQError


def _copy_file(src: Path, dest: Path) -> None:
    with open(src, "rb") as fin, open(dest, "xb") as fout:
        shutil.copyfileobj(fin, fout, 4 * 1024 * 1024)
        fout.flush()
        os.fsync(fout.fileno())


def _refuse_unless_replaceable(dest: Path) -> None:
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise TQError(f"{dest} exists and is not a folder", f"remove {dest} or pass another --to")
    if dest.is_dir() and any(dest.iterdir()) and problem(dest, current=False) is not None:
        what = "a demo model copy that was changed" if (dest / MANIFEST).exists() else "files tqdeploy did not write"
        raise TQError(f"{dest} holds {what}; it is left as it is", f"move {dest} away or pass another --to")


def copy_to(src: Path, dest: Path) -> str:
    """Put a verified copy of the checkpoint src at dest; "copied" or "up to date"."""
    dest = Path(os.path.abspath(dest))
    if dest.is_dir() and not dest.is_symlink() and problem(dest) is None:
        src_manifest = (src / MANIFEST).read_bytes()
        if (dest / MANIFEST).read_bytes() == src_manifest:
            return "up to date"
    _refuse_unless_replaceable(dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    except OSError as err:
        raise TQError(f"cannot write beside {dest}: {err.strerror}", "pass a --to folder you can write") from None
    try:
        folder = work / "checkpoint"
        folder.mkdir()
        for entry in sorted(src.iterdir()):
            _copy_file(entry, folder / entry.name)
        if (why := problem(folder)) is not None:
            raise TQError(f"the copy of {src} does not verify ({why})", "check the disk, then run it again")
        if dest.exists():  # empty, or our own verified older copy: checked above
            os.replace(dest, work / "old")
        os.replace(folder, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return "copied"
