"""What every collector is given: the build dir, the deployment state, the time window, bounded subprocesses,
and the record of what was skipped (a symlink, a FIFO, a path outside the build). What one collector hands
to another is no part of it: that travels as declared products (bundle/collector.py)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.buildfolder import STATE_DIR, BuildFolder
from tqdeploy.redact import Redactor
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.state import CorruptState, parsed_record
from tqdeploy.safeio import FileRefused, is_within, read_text

SUBPROCESS_TIMEOUT_S = 10.0
STATE_LIMIT = 1024 * 1024


class Absent(Exception):
    """What a collector reads is not on this host (no build dir, no server, no nvidia-smi): not a failure."""


@dataclass(frozen=True)
class BundleContext:
    build_dir: Path | None
    redactor: Redactor
    now: float = field(default_factory=time.time)
    logs_since_s: float | None = None
    state: dict[str, Any] | None = None  # the file as it lies: evidence, and what the redactor learns from
    # The same JSON validated into runtime's typed record (state_record): what a collector acts on. None when
    # there is no state or a field is not what tqdeploy writes there.
    record: StateRecord | None = None
    skipped: list[dict[str, str]] = field(default_factory=list)  # appended to by every collector

    def need_build_dir(self) -> Path:
        if self.build_dir is None or not self.build_dir.is_dir():
            raise Absent("no build directory")
        return self.build_dir

    def need_state(self) -> dict[str, Any]:
        if self.state is None:
            raise Absent(f"no {STATE_DIR}/state.json (nothing started with `tqdeploy up`)")
        return self.state

    def skip(self, path: Path | str, reason: str) -> None:
        """Recorded in the manifest (redacted); a symlink's target is named, never followed."""
        entry = {"path": str(path), "reason": reason}
        if os.path.islink(path):
            try:
                entry["target"] = os.readlink(path)
            except OSError:
                pass
        self.skipped.append(entry)


def read_state(build_dir: Path | None, skipped: list[dict[str, str]] | None = None) -> dict[str, Any] | None:
    """BUILD_DIR/.tqdeploy/state.json (schema tqdeploy.state/1, written by `tqdeploy up`), or None: a regular
    file inside the build, not followed through a symlink, at most 1 MiB, a JSON object."""
    if build_dir is None:
        return None
    path = BuildFolder(build_dir).state_json  # as given: the bundle records the paths the user named
    if not os.path.lexists(path):
        return None
    try:
        if os.path.islink(build_dir / STATE_DIR):
            raise FileRefused(f"{build_dir / STATE_DIR} is a symlink; not followed", "")
        data = json.loads(read_text(path, STATE_LIMIT, "state file", within=build_dir))
    except (FileRefused, ValueError) as exc:
        if skipped is not None:
            entry = {"path": str(path), "reason": str(exc).split(";")[0]}
            if os.path.islink(path):
                entry["target"] = os.readlink(path)
            skipped.append(entry)
        return None
    return data if isinstance(data, dict) else None


def state_record(build_dir: Path | None, state: dict[str, Any] | None) -> StateRecord | None:
    """The state read_state returned, validated once into the typed record (runtime/statefields.py)."""
    if build_dir is None or state is None:
        return None
    try:
        return parsed_record(state, build_dir)
    except CorruptState:
        return None


def inside(build_dir: Path, value: Any) -> Path | None:
    """A path named by the state, when it resolves inside the build (relative ones against it), else None."""
    if not isinstance(value, str) or not value:
        return None
    path = Path(value) if os.path.isabs(value) else build_dir / value
    return path if is_within(path, build_dir) else None


def run_bounded(argv: list[str], timeout: float = SUBPROCESS_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """A subprocess that cannot hold the bundle up: killed after timeout (TimeoutExpired propagates)."""
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL, errors="replace"
    )
