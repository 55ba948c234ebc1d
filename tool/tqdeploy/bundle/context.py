"""What every collector is given: the build dir, the deployment state, the time window, bounded subprocesses."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.redact import Redactor

SUBPROCESS_TIMEOUT_S = 10.0
STATE_DIR = ".tqdeploy"


class Absent(Exception):
    """What a collector reads is not on this host (no build dir, no server, no nvidia-smi): not a failure."""


@dataclass
class BundleContext:
    build_dir: Path | None
    redactor: Redactor
    now: float = field(default_factory=time.time)
    logs_since_s: float | None = None
    state: dict[str, Any] | None = None
    scratch: dict[str, Any] = field(default_factory=dict)  # collectors share results (the host snapshot)

    def need_build_dir(self) -> Path:
        if self.build_dir is None or not self.build_dir.is_dir():
            raise Absent("no build directory")
        return self.build_dir

    def need_state(self) -> dict[str, Any]:
        if self.state is None:
            raise Absent(f"no {STATE_DIR}/state.json (nothing started with `tqdeploy up`)")
        return self.state


def read_state(build_dir: Path | None) -> dict[str, Any] | None:
    """BUILD_DIR/.tqdeploy/state.json (schema tqdeploy.state/1, written by `tqdeploy up`), or None."""
    if build_dir is None:
        return None
    try:
        data = json.loads((build_dir / STATE_DIR / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def run_bounded(argv: list[str], timeout: float = SUBPROCESS_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """A subprocess that cannot hold the bundle up: killed after timeout (TimeoutExpired propagates)."""
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL, errors="replace"
    )
