"""`status`: is the deployment live and ready, in which phase, since when, and what it holds (GPU memory)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdeploy.runtime import gpu, http, procs, state

SCHEMA = "tqdeploy.status/1"


@dataclass
class StatusResult:
    build_dir: str
    data: dict[str, Any]

    @property
    def exit_code(self) -> int:
        """0 ready; 1 running but not ready, stopped, failed or never started."""
        return 0 if self.data["ready"] else 1

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "build_dir": self.build_dir, **self.data}

    def render(self, console) -> None:
        from tqdeploy.runtime.view import render_status

        render_status(console, self)


def status(build_dir: Path, *, probe: bool = True) -> StatusResult:
    """State plus what is true now: processes alive, /health, GPU memory. A corrupt state file raises."""
    build_dir = Path(build_dir).resolve()
    st = state.read_state(build_dir)
    if st is None:
        data: dict[str, Any] = {
            "state": "not-started",
            "live": False,
            "ready": False,
            "phase": None,
            "pid": None,
            "pgid": None,
            "base_url": None,
            "served_model_name": None,
            "uptime_s": None,
            "restarts": 0,
            "last_error": None,
            "log_path": None,
            "processes": [],
            "health": None,
            "gpus": gpu.gpu_memory() if probe else None,
            "exit_code": None,
        }
        return StatusResult(str(build_dir), data)
    container = None
    if st.get("container_id"):
        from tqdeploy.runtime.container import container_facts

        try:
            container = container_facts(st["container_id"])
        except Exception:  # no engine: the container cannot be live as far as we can tell
            container = None
        live = bool(container and container["status"] == "running")
    else:
        live = True  # decided below: by the deployment's own processes, not by state.json's pids
    from tqdeploy.runtime.marker import trust_state

    trusted = trust_state(build_dir, st)  # only processes with this folder's marker count (runtime/procs.py)
    members = procs.deployment_procs(trusted.marker, trusted.started_at) if live else []
    if not st.get("container_id"):
        live = bool(members)
    health = http.health(st["base_url"]) if (probe and live and st.get("base_url")) else None
    # `up --no-wait` never records ready: what /health answers now is the truth.
    ready = bool(live and health == 200)
    started = st.get("started_at")
    if live:
        label = "ready" if ready else ("unhealthy" if st.get("ready") else "starting")
    else:
        label = str(st["phase"]) if st.get("phase") in ("stopped", "failed") else "exited"
    data = {
        "state": label,
        "live": live,
        "ready": ready,
        "phase": st.get("phase"),
        "pid": st.get("pid"),
        "pgid": st.get("pgid"),
        "runtime": st.get("runtime"),
        "base_url": st.get("base_url"),
        "served_model_name": st.get("served_model_name"),
        "started_at": started,
        "uptime_s": round(time.time() - started, 1) if (live and started) else None,
        "restarts": st.get("restarts", 0),
        "last_error": st.get("last_error"),
        "exit_code": st.get("exit_code"),
        "log_path": st.get("log_path"),
        "spec_sha256": st.get("spec_sha256"),
        "processes": [p.to_dict() for p in members],
        "health": health,
        "container": container,
        "gpus": gpu.gpu_memory() if probe else None,
    }
    return StatusResult(str(build_dir), data)
