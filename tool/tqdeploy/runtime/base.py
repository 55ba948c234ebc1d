"""The one interface every runtime implements; `up`, `down`, `status`, `logs` and `bundle` talk to nothing else.

A runtime is one folder, runtime/backends/<name>/, whose package exports its class, plus one line in
runtime/registry.py (name -> "module:Class"); `--runtime NAME`, the state's `runtime` field and every command
follow from the registry. The class is built without arguments. Nothing outside a backend's folder names it.

What the commands do around it, the same for every runtime: the doctor and drift checks, the start lock,
state.json's shared fields (runtime/state.py: `up` writes it before `start`, the keeper adds pid / exit_code),
readiness (/health and /v1/models, runtime/wait.py), the stamped log format (runtime/logstamp.py) and the failure
classification (runtime/classify.py).

The interface is the Protocol `Runtime`; `RuntimeBase` gives every optional capability its default, so a runtime
inherits it and writes only what differs (the dummy in docs/architecture.md writes `start` alone). No caller
probes for a member: each is declared here.

    name, start_options          the registry's name; the `up` options it takes besides the common ones
    state_type                   its own section of state.json (state["backend"]): a frozen dataclass whose
                                 from_json refuses a bad type or an unknown key (default: NoBackendState, empty)
    stands_in_for, takes()       `up --runtime X` starts this one instead on a build it takes (multinode for
                                 process on a build with multinode.json); default: stands in for nothing
    adopts()                     `down --force` without a usable state: whether it may have left something here
    prepare(dep, options)        runtime checks before anything starts (an ERROR refuses `up` at once) and the
                                 section to record; default: nothing to check, an empty section
    preflight(dep)               the host checks before a start; default: this host's port, model, key file and
                                 GPU memory (preflight.host_findings); a runtime that runs elsewhere overrides it
    start(dep, prepared, log)    start the server detached, its output stamped into log_path; every process it
                                 starts carries the marker env (state.MARKER_ENV): that is how `down` proves what
                                 is the deployment's. The one member without a default.
    failed(...)                  while `up` waits: a failure it knows before the log says it (a dead worker node);
                                 default: None
    is_live(...)                 cheap: its keeper or server is provably alive; default: the recorded keeper or
                                 server pid carries the marker and started after the state's started_at
    facts(...)                   what runs now, for `status` and `logs -f`: live, the processes, status extras (the
                                 container, the nodes) and their findings; default: the marker's processes
    other_groups(build, trusted) process groups of the deployment besides the keeper's (a multi-node build's
                                 workers): stopped with it and never called orphans; default: none
    stop(request)                stop it all and prove nothing is left; default: stop.stop_deployment
    inspect(build, record, secret)  what a bundle records of what it runs, secrets passed through secret();
                                 default: Unavailable (nothing beyond the processes and logs)
    logs(build_dir)              the current run's stamped log; default: state.current_log
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from tqdeploy.findings import Finding
from tqdeploy.runtime import preflight, procs, state
from tqdeploy.runtime.deployment import Deployment
from tqdeploy.runtime.interface import (
    Prepared,
    Runtime,
    RuntimeFacts,
    Started,
    StartOptions,
    StopRequest,
    Unavailable,
)
from tqdeploy.runtime.marker import Trusted
from tqdeploy.runtime.record import BackendState, StateRecord
from tqdeploy.runtime.statefields import SectionState
from tqdeploy.runtime.stop import StopReport, stop_deployment

# The interface's types, re-exported: a runtime imports everything it needs from here.
__all__ = [
    "NoBackendState",
    "Prepared",
    "Runtime",
    "RuntimeBase",
    "RuntimeFacts",
    "StartOptions",
    "Started",
    "StopRequest",
    "Unavailable",
]


class NoBackendState(SectionState):
    """The section of a runtime that records nothing of its own: it must be empty."""


class RuntimeBase:
    """Every capability's default (the module docstring lists them); a runtime overrides what differs."""

    name: ClassVar[str]
    start_options: ClassVar[frozenset[str]] = frozenset()
    state_type: ClassVar[type[BackendState]] = NoBackendState
    stands_in_for: ClassVar[str | None] = None

    @classmethod
    def takes(cls, build_dir: Path) -> bool:
        return False

    @classmethod
    def adopts(cls, build_dir: Path) -> bool:
        return False  # `down --force` falls back to the default runtime, whose marker sweep finds every runtime's

    def prepare(self, dep: Deployment, options: StartOptions) -> Prepared:
        return Prepared()

    def preflight(self, dep: Deployment) -> list[Finding]:
        return preflight.host_findings(dep)

    def start(self, dep: Deployment, prepared: Prepared, log_path: Path) -> Started:
        raise NotImplementedError(f"the {self.name} runtime does not say how it starts")

    def failed(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> Finding | None:
        return None

    def is_live(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> bool:
        pids = (record.supervisor_pid, record.pid)
        return any(procs.owned(pid, trusted.marker, trusted.started_at) for pid in pids)

    def facts(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> RuntimeFacts:
        # By the deployment's own processes (marker, start time), not by state.json's pids.
        members = procs.deployment_procs(trusted.marker, trusted.started_at)
        return RuntimeFacts(bool(members), members)

    def other_groups(self, build_dir: Path, trusted: Trusted) -> list[int]:
        return []

    def stop(self, request: StopRequest) -> StopReport:
        r = request.record
        return stop_deployment(
            request.build_dir,
            r.pgid,
            request.grace,
            server_pid=r.pid,
            host=request.host,
            port=request.port,
            gpu_baseline=request.gpu_baseline,
            trusted=request.trusted,
            groups=self.other_groups(request.build_dir, request.trusted),
        )

    def inspect(self, build_dir: Path, record: StateRecord, secret: Callable[[str], str]) -> dict[str, Any]:
        raise Unavailable(f"the {self.name} runtime has nothing to record beyond the processes and logs")

    def logs(self, build_dir: Path) -> Path:
        return state.current_log(build_dir)
