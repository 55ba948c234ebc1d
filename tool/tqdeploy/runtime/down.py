"""`down`: stop a deployment gracefully (SIGTERM to its group), then forcibly, and prove nothing is left."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.findings import Finding, Severity
from tqdeploy.runtime import state
from tqdeploy.runtime.classify import AREA
from tqdeploy.runtime.marker import foreign_pids, trust_state
from tqdeploy.runtime.stop import StopReport, stop_deployment

SCHEMA = "tqdeploy.down/1"


@dataclass
class DownResult:
    build_dir: str
    status: str  # stopped | not-running
    log_path: str | None = None
    report: StopReport | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if any(f.severity == Severity.ERROR for f in self.findings) else 0

    def to_dict(self) -> dict[str, Any]:
        r = self.report or StopReport()
        return {
            "schema": SCHEMA,
            "build_dir": self.build_dir,
            "status": self.status,
            "log_path": self.log_path,
            "stopped": r.found,
            "killed": r.killed,
            "left": r.left,
            "port_free": r.port_free,
            "gpus": r.gpus,
            "seconds": round(r.seconds, 2),
            "findings": [f.to_dict() for f in self.findings],
        }

    def render(self, console) -> None:
        from tqdeploy.runtime.view import render_down

        render_down(console, self)


def down(build_dir: Path, *, timeout: float = 30.0, force: bool = False) -> DownResult:
    """Stop BUILD_DIR's deployment. force: also when state.json is corrupt or missing (finds by marker)."""
    build_dir = Path(build_dir).resolve()
    result = DownResult(str(build_dir), "not-running")
    try:
        st = state.read_state(build_dir)
    except state.CorruptState as err:
        if not force:
            raise
        st = None
        result.findings.append(
            Finding(
                "TQ420",
                Severity.WARN,
                "state.json was corrupt: processes found by the deployment marker",
                {"error": err.message},
                "nothing to do: down --force rewrote the state",
                AREA,
            )
        )
    st = st or {}
    trusted = trust_state(build_dir, st)
    if force:  # by the marker alone, whatever the state says about times
        trusted.started_at = None
    # A state written for another folder (a copy) or without a marker: nothing in it is acted on.
    own = st if st.get("marker") == trusted.marker else {}
    host, port = own.get("host"), own.get("port")
    if port is None and force:
        host, port = _spec_address(build_dir)
    container = _stop_container(own, timeout, force, build_dir)
    report = stop_deployment(
        build_dir,
        own.get("pgid"),
        timeout,
        server_pid=None if own.get("container_id") else own.get("pid"),
        host=host,
        port=port,
        gpu_baseline=own.get("gpu_baseline"),
        trusted=trusted,
        groups=_worker_groups(build_dir, trusted),
    )
    result.report, result.log_path = report, own.get("log_path") or str(state.current_log(build_dir))
    foreign = foreign_pids(st, trusted, [p["pid"] for p in report.found])
    result.findings += trusted.findings + ([foreign] if foreign else []) + report.findings
    if container.get("found"):
        report.found.insert(0, {"container_id": container["id"], "title": "container"})
    if report.found:
        result.status = "stopped"
    if st or force:
        state.update_state(build_dir, phase="stopped", ready=False, stopped_at=time.time())
    return result


def _worker_groups(build_dir: Path, trusted) -> list[int]:
    """A multi-node build's worker process groups (runtime/multinode.py): stopped by the marker like the leader's."""
    from tqdeploy.runtime import multinode

    return multinode.worker_pgids(build_dir, trusted.marker, trusted.started_at)


def _stop_container(st: dict[str, Any], timeout: float, force: bool, build_dir: Path) -> dict[str, Any]:
    """The docker runtime's container (by id, or with --force by the deployment label)."""
    cid = st.get("container_id")
    if not cid and not (force and _docker_here()):
        return {}
    from tqdeploy.runtime.container import LABEL, client, stop_container

    if not cid:
        found = client().containers.list(all=True, filters={"label": f"{LABEL}={state.deployment_marker(build_dir)}"})
        if not found:
            return {}
        cid = found[0].id
    return stop_container(cid, timeout) | {"id": cid}


def _docker_here() -> bool:
    import os

    return os.path.exists("/var/run/docker.sock") or bool(os.environ.get("DOCKER_HOST"))


def _spec_address(build_dir: Path) -> tuple[str | None, int | None]:
    try:
        from tqdeploy.runtime.deployment import load_deployment

        dep = load_deployment(build_dir)
        return dep.host, dep.port
    except Exception:
        return None, None
