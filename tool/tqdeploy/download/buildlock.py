"""The resolved commit in a build's tqdeploy.lock.json, under the model pin, beside the manifest's copy.

`tqdeploy build` renders ``pins.model`` from the spec (repo, revision, pinned, note). A download adds
two keys there: ``resolved_commit`` (what the revision resolved to) and ``manifest`` (the manifest's
path, relative to the build directory when it lies inside). Why this is safe for `build --check`:
it hashes the files the lock lists, and the lock never lists itself (render/lock.py make_lock); with
a spec it compares those file hashes only (render/build.py run_check). A later `tqdeploy build`
rewrites the lock from the spec and drops both keys: run the download again (files in place are
verified, not fetched) to record them again, or pin model.revision to the commit.

Which lock: the one given with ``--lock``, or, found on its own, the lock of the build directory
whose models dir the target is (``<build>/<storage.models_dir>/<ORG--NAME>``, read from the build's
copy of its spec), which is where the rendered download.sh puts the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdeploy.buildfolder import LOCK_NAME, LOCK_SCHEMA
from tqdeploy.deployspec import load_spec
from tqdeploy.errors import TQError
from tqdeploy.filenames import SPEC_FILE_NAME
from tqdeploy.fsutil import atomic_write_text, exclusive_dir
from tqdeploy.idents import REVISION_RE, check_no_control
from tqdeploy.runtime.deployment import spec_model_dir
from tqdeploy.safeio import MIB, FileRefused, read_bytes

BUILD_WAIT_S = 30.0  # how long a finished download waits for a build writing into the same directory


@dataclass(frozen=True)
class BuildLock:
    path: Path
    repo: str
    revision: str

    @property
    def build_dir(self) -> Path:
        return self.path.parent


@dataclass(frozen=True)
class LockRecord:
    path: Path
    resolved_commit: str
    previous: str | None  # the commit recorded before, when there was one

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "resolved_commit": self.resolved_commit, "previous": self.previous}


PASS_A_LOCK = f"pass the {LOCK_NAME} that `tqdeploy build` wrote, or its build directory"


def _read(path: Path) -> dict[str, Any]:
    # A lock by its own name that is broken is rebuilt; any other file was simply the wrong one to pass.
    fix = "re-run `tqdeploy build` to rewrite it" if path.name == LOCK_NAME else PASS_A_LOCK

    if not path.exists():
        raise TQError(f"{path} not found", PASS_A_LOCK)
    if path.is_dir():
        raise TQError(f"{path} is a folder without a {LOCK_NAME}", PASS_A_LOCK)
    try:  # bounded, and a FIFO or device is refused instead of blocking (the path is the user's: links followed)
        data = json.loads(read_bytes(path, 16 * MIB, "lock file", follow_symlinks=True).decode("utf-8"))
    except FileRefused as err:
        raise TQError(err.message, PASS_A_LOCK) from None
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise TQError(f"{path}: not valid JSON ({err})", fix) from None
    pins = data.get("pins") if isinstance(data, dict) else None
    if not isinstance(pins, dict) or data.get("schema") != LOCK_SCHEMA or not isinstance(pins.get("model"), dict):
        raise TQError(f"{path}: not a {LOCK_SCHEMA} lock file", fix)
    lock: dict[str, Any] = data  # the JSON object, its pins checked above
    return lock


def open_build_lock(path: Path) -> BuildLock:
    """The lock at ``path`` (a file, or a build directory holding one), or a TQError naming what is wrong."""
    path = Path(path).expanduser().absolute()
    if path.is_dir() and (path / LOCK_NAME).is_file():
        path = path / LOCK_NAME
    model = _read(path)["pins"]["model"]
    if not model.get("repo"):
        raise TQError(
            f"{path}: that build serves a local directory (model.path), not a repository",
            "drop --lock: nothing is downloaded for a local model",
        )
    lock = BuildLock(path, str(model["repo"]), str(model.get("revision") or ""))

    check_no_control(f"{path}: pins.model.repo", lock.repo, "re-run `tqdeploy build` to rewrite the lock")
    if lock.revision and not REVISION_RE.match(lock.revision):
        raise TQError(
            f"{path}: pins.model.revision {lock.revision[:120]!r} is not a branch, tag or commit",
            "re-run `tqdeploy build` to rewrite the lock",
        )
    return lock


def mismatch(lock: BuildLock, repo: str, revision: str) -> str | None:
    """Why a download of repo@revision is not the model this lock pins; None when it is."""
    if lock.repo != repo or lock.revision != revision:
        return f"{lock.path} pins {lock.repo}@{lock.revision}, not {repo}@{revision}"
    return None


def require_match(lock: BuildLock, repo: str, revision: str) -> None:
    problem = mismatch(lock, repo, revision)
    if problem:
        raise TQError(problem, f"download {lock.repo}@{lock.revision} for that build, or leave out --lock")


def target_lock(
    lock: Path | None, dest: Path, repo: str, revision: str, on_event: Callable[[str], None]
) -> BuildLock | None:
    """The lock a download of repo@revision into ``dest`` records its commit in, decided before any fetch.

    ``lock`` given: it must pin this repo and revision (TQError otherwise). Not given: the lock of the
    build ``dest`` serves, when it pins the same; otherwise None, and ``on_event`` says why.
    """
    if lock is not None:
        given = open_build_lock(lock)
        require_match(given, repo, revision)
        return given
    found = find_build_lock(dest, on_event)
    problem = mismatch(found, repo, revision) if found is not None else None
    if problem:
        on_event(f"commit not recorded: {problem}")
        return None
    return found


def find_build_lock(dest: Path, on_event: Callable[[str], None]) -> BuildLock | None:
    """The lock of the build whose models dir ``dest`` is; None (saying why, when one is near) otherwise."""
    dest = Path(dest).expanduser().absolute()
    build_dir = next((p for p in dest.parents if (p / LOCK_NAME).is_file()), None)
    if build_dir is None:
        return None

    try:
        lock = open_build_lock(build_dir / LOCK_NAME)
        spec = load_spec(build_dir / SPEC_FILE_NAME)
    except TQError as err:
        on_event(f"commit not recorded in {build_dir / LOCK_NAME}: {err.message}")
        return None

    served = spec_model_dir(spec, build_dir)
    if served.resolve() != dest.resolve():
        on_event(f"commit not recorded in {lock.path}: that build serves its model from {served}, not {dest}")
        return None
    return lock


def record_commit(lock: BuildLock, repo: str, revision: str, commit: str, manifest_path: Path) -> LockRecord:
    """Write resolved_commit (and the manifest's path) into the lock's model pin, atomically.

    The lock is read again here, not reused from before the download: a build may have rewritten it
    meanwhile, and only the two keys of the model pin change; every other byte is build's.
    """
    busy = TQError(
        f"a tqdeploy build kept {lock.build_dir} busy for {BUILD_WAIT_S:g} s, so the commit"
        " is not recorded in its lock",
        "run the same command again when the build is done (files in place are verified, not fetched)",
    )
    # The lock `tqdeploy build` holds while it writes: a lock rewritten by a running build is read once it is done.
    with exclusive_dir(lock.build_dir, busy, wait_s=BUILD_WAIT_S):
        return _record(lock, repo, revision, commit, manifest_path)


def _record(lock: BuildLock, repo: str, revision: str, commit: str, manifest_path: Path) -> LockRecord:
    data = _read(lock.path)
    now = BuildLock(lock.path, str(data["pins"]["model"].get("repo")), str(data["pins"]["model"].get("revision")))
    require_match(now, repo, revision)
    model = data["pins"]["model"]
    previous = model.get("resolved_commit")
    model["resolved_commit"] = commit
    manifest_path = Path(manifest_path).absolute()
    try:
        model["manifest"] = manifest_path.relative_to(lock.build_dir).as_posix()
    except ValueError:
        model["manifest"] = str(manifest_path)
    # The same serialisation as render/lock.py make_lock, so only the two keys differ.
    atomic_write_text(lock.path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=True) + "\n")
    return LockRecord(lock.path, commit, previous if previous != commit else None)
