"""Deployment state under BUILD_DIR/.tqdeploy/: state.json (schema tqdeploy.state/1) and the logs.

Two writers share state.json: `up`/`down` (phase, ready, findings) and the supervisor (child pid, exit
code). Every write is a read-modify-write under an flock on state.lock and lands through a temp file
renamed into place, so a reader never sees half a file.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdeploy.buildfolder import folder, own_dir
from tqdeploy.errors import TQError
from tqdeploy.runtime.folderid import MARKER_ENV as MARKER_ENV  # re-exported: callers name state.MARKER_ENV
from tqdeploy.runtime.folderid import deployment_marker as deployment_marker  # and state.deployment_marker
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.statefields import BadField, record
from tqdeploy.safeio import FileRefused, read_bytes

SCHEMA = "tqdeploy.state/1"

FIELDS: dict[str, Any] = {
    "schema": SCHEMA,
    "runtime": "process",
    "pid": None,
    "pgid": None,
    "host": "127.0.0.1",
    "port": None,
    "base_url": None,
    "served_model_name": None,
    "spec_sha256": None,
    "log_path": None,
    "started_at": None,
    "phase": "starting",
    "ready": False,
    "api_key_file": None,
    "restarts": 0,
    "last_error": None,
    "marker": None,  # the folder's deployment_marker when `up` wrote it; another value: a copied state
}


class CorruptState(TQError):
    """state.json exists but cannot be read; `down --force` still finds the processes by their marker."""


def state_dir(build_dir: Path) -> Path:
    return folder(build_dir).state_dir


def state_path(build_dir: Path) -> Path:
    return folder(build_dir).state_json


def logs_dir(build_dir: Path) -> Path:
    return folder(build_dir).logs


def current_log(build_dir: Path) -> Path:
    return folder(build_dir).current_log


STATE_LIMIT = 1 << 20  # tqdeploy writes a few KiB; a larger file is not its state


def _corrupt(build_dir: Path, what: str) -> CorruptState:
    return CorruptState(
        f"{state_path(build_dir)} {what}",
        f"run `tqdeploy down {build_dir} --force` (it finds the deployment's processes without the file), "
        f"or `tqdeploy up {build_dir}` again",
    )


def read_state(build_dir: Path) -> dict[str, Any] | None:
    """The state, None when there is none; CorruptState (exit 2) when the file cannot be read or a field
    holds what tqdeploy never writes there.

    Read as untrusted input (safeio): a regular file inside the build, at most 1 MiB, no final symlink
    followed; the dict returned holds only the fields statefields knows, each validated.
    """
    record = read_record(build_dir)
    return None if record is None else record.to_json()


def read_record(build_dir: Path) -> StateRecord | None:
    """read_state as the typed record (runtime/record.py): what runtime/ passes along."""
    path = state_path(build_dir)
    if not os.path.lexists(path):
        return None
    try:
        raw = read_bytes(path, STATE_LIMIT, "state file", within=Path(build_dir).resolve())
        data = json.loads(raw.decode("utf-8"))
    except FileRefused as err:
        raise CorruptState(
            err.message,
            f"{err.remediation}; or run `tqdeploy down {build_dir} --force`: it finds the deployment's processes "
            "without the file",
        ) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise _corrupt(build_dir, f"is corrupt ({type(err).__name__}: {str(err)[:200]})") from None
    return parsed_record(data, build_dir)


def parsed_record(data: object, build_dir: Path) -> StateRecord:
    """state.json's parsed JSON as the typed record, every field validated; CorruptState when it is not one.
    For a command that already holds the file's JSON (the bundle keeps it as evidence): one read, one check."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise _corrupt(build_dir, f"is not a {SCHEMA} file")
    try:
        return record(data, build_dir)
    except BadField as err:
        raise _corrupt(build_dir, f"is corrupt: {err}") from None


@contextmanager
def _locked(build_dir: Path) -> Iterator[None]:
    where = folder(build_dir)
    own_dir(where.root, where.state_dir)  # never through a link out of the build (buildfolder.own_dir)
    with open(where.state_lock, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write(build_dir: Path, data: dict[str, Any]) -> None:
    path = state_path(build_dir)
    tmp = path.with_name(f".state.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def new_state(build_dir: Path, **fields: Any) -> dict[str, Any]:
    """Replace any earlier state with a fresh one (a new run)."""
    data = dict(FIELDS) | fields
    with _locked(build_dir):
        _write(build_dir, data)
    return data


def update_state(build_dir: Path, **fields: Any) -> dict[str, Any]:
    """Merge fields into the current state (a corrupt or missing file starts from the defaults). It reads the file
    again under the lock on purpose: the keeper (supervisor, log pump) writes pid and exit code at any time, and a
    command's loaded record would overwrite them."""
    with _locked(build_dir):
        try:
            data = read_state(build_dir) or dict(FIELDS)
        except CorruptState:
            data = dict(FIELDS)
        data.update(fields)
        _write(build_dir, data)
    return data


def clear_state(build_dir: Path) -> None:
    with _locked(build_dir):
        state_path(build_dir).unlink(missing_ok=True)


def new_log(build_dir: Path) -> Path:
    """A fresh log file for this run; server.log points at it; earlier runs' logs stay."""
    directory = own_dir(build_dir, folder(build_dir).logs)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    path = directory / f"server-{stamp}.log"
    n = 1
    while path.exists():
        n += 1
        path = directory / f"server-{stamp}-{n}.log"
    path.touch()
    link = folder(build_dir).current_log
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(path.name)
    return path
