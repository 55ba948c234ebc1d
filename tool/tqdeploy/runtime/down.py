"""`down`: stop a deployment gracefully (SIGTERM to its group), then forcibly, and prove nothing is left."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from tqdeploy.findings import Finding, Severity
from tqdeploy.output import render_findings
from tqdeploy.runtime import registry, state
from tqdeploy.runtime.base import StopRequest
from tqdeploy.runtime.classify import AREA
from tqdeploy.runtime.deployment import load_deployment
from tqdeploy.runtime.marker import foreign_pids, trust_state
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.stop import StopReport
from tqdeploy.runtime.view import problems

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
            # a never-started build has no log: no path that does not exist (issue 21)
            "log_path": self.log_path if self.log_path and Path(self.log_path).is_file() else None,
            "stopped": r.found,
            "killed": r.killed,
            "left": r.left,
            "port_free": r.port_free,
            "gpus": r.gpus,
            "seconds": round(r.seconds, 2),
            "findings": [f.to_dict() for f in self.findings],
        }

    def render(self, console: Console) -> None:
        r = self.report
        if self.status == "stopped" and r is not None:
            forced = f", {len(r.killed)} needed SIGKILL" if r.killed else ""
            left = "nothing left" if not r.left else f"{len(r.left)} process(es) still running"
            console.print(f"stopped {len(r.found)} process(es) in {r.seconds:.1f} s{forced}; {left}")
        else:
            console.print(f"{self.build_dir}: nothing running")
        if r is not None and r.port_free is not None:
            console.print("port: free" if r.port_free else "port: still in use")
        if r is not None and r.gpus:
            for g in r.gpus:
                console.print(f"GPU {g['index']}: {g['used_mib']} / {g['total_mib']} MiB used")
        shown = problems(self.findings)
        if shown:
            render_findings(console, shown, title="tqdeploy down", show_ok=False)
        if self.log_path and Path(self.log_path).exists():  # a never-started build has no log to point at
            console.print(f"logs kept: {self.log_path}")


def down(build_dir: Path, *, timeout: float = 30.0, force: bool = False) -> DownResult:
    """Stop BUILD_DIR's deployment. force: also when state.json is corrupt or missing (finds by marker)."""
    build_dir = Path(build_dir).resolve()
    result = DownResult(str(build_dir), "not-running")
    try:
        record = state.read_record(build_dir)  # read and trusted once; the record is carried through the stop
    except state.CorruptState as err:
        if not force:
            raise
        record = None
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
    st = record or StateRecord.empty()
    trusted = trust_state(build_dir, st)
    if force:  # by the marker alone, whatever the state says about times
        trusted.started_at = None
    # A state written for another folder (a copy) or without a marker: nothing in it is acted on.
    own = st if st.marker == trusted.marker else StateRecord.empty()
    host, port = own.host, own.port
    if port is None and force:
        host, port = _spec_address(build_dir)
    runtime = registry.get(own.runtime) if own.runtime else registry.for_orphans(build_dir)
    request = StopRequest(build_dir, own, trusted, timeout, force, host, port, own.gpu_baseline)
    report = runtime.stop(request)
    result.report, result.log_path = report, own.log_path or str(runtime.logs(build_dir))
    foreign = foreign_pids(st, trusted, [p["pid"] for p in report.found])
    result.findings += trusted.findings + ([foreign] if foreign else []) + report.findings
    report.found[:0] = report.others
    if report.found:
        result.status = "stopped"
    if not st.is_empty or force:
        # The one re-read of `down`: update_state merges under the lock with what the keeper wrote while it stopped.
        state.update_state(build_dir, phase="stopped", ready=False, stopped_at=time.time())
    return result


def _spec_address(build_dir: Path) -> tuple[str | None, int | None]:
    try:
        dep = load_deployment(build_dir)
        return dep.host, dep.port
    except Exception:
        return None, None
