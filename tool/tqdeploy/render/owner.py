"""Whose build folder this is: a build never takes over a folder that holds another deployment unasked.

The lock names the deployment (its `name`: image tag, compose project and Kubernetes names derive from it)
and the hash of the spec it was built from. Building another deployment into that folder would replace
its files and remove the ones the new spec does not render, each still exactly as tqdeploy wrote it, so
the hash guard (render/guard.py) lets it through: `build --embedded tiny-cpu-demo` into ./build swapped a
Qwen deployment for the demo. So a build whose name differs from the lock's is refused, and so is an
embedded spec whose hash differs (`init` keeps the embedded name, so a folder built from a spec edited
from it carries that name too). Rebuilding the same deployment from its edited spec file is the normal
loop and goes on. `--take-over` builds anyway; the guard still replaces or removes only the files the
lock proves unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.render.guard import RENDERABLE, previous_lock
from tqdeploy.render.lock import LOCK_NAME

SHOWN = 20  # files named in the refusal; the rest are counted


def _identity(lock: dict[str, Any] | None) -> tuple[str, str]:
    lock = lock if isinstance(lock, dict) else {}
    name, spec_hash = lock.get("name"), lock.get("spec_sha256")
    return (name if isinstance(name, str) else "", spec_hash if isinstance(spec_hash, str) else "")


def other_deployment(out_dir: Path, new_lock: bytes, *, spec_must_match: bool) -> TQError | None:
    """The refusal when out_dir's lock is another deployment's than new_lock's; None when it is this one's
    (or there is no lock: an unreadable one is the guard's conflict, refused there)."""
    try:
        old = previous_lock(Path(out_dir))
    except TQError:
        return None
    if old is None:
        return None
    old_name, old_hash = _identity(old)
    new_name, new_hash = _identity(json.loads(new_lock))
    if old_name == new_name and (old_hash == new_hash or not spec_must_match):
        return None
    if old_name != new_name:
        what = f"the deployment {old_name!r}, not {new_name!r}"
    else:
        what = f"{old_name!r} built from another spec (sha256 {old_hash[:12]}), not the embedded one ({new_hash[:12]})"
    return TQError(
        f"{out_dir} holds {what}: building here would replace or remove "
        f"its files: {_present(Path(out_dir), old)}; nothing was changed",
        f"build into another folder (--out {Path(out_dir) / new_name}), or pass --take-over to replace that "
        "deployment (only files its lock proves unchanged are replaced or removed)",
    )


def _present(out_dir: Path, lock: dict[str, Any]) -> str:
    files = lock.get("files")
    files = files if isinstance(files, dict) else {}
    names = sorted(rel for rel in files if rel in RENDERABLE and (out_dir / rel).is_file()) + [LOCK_NAME]
    shown = ", ".join(names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
