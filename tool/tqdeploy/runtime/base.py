"""The one interface every runtime implements; `up`, `down`, `status` and `logs` talk to nothing else.

A runtime is one class in one module, named in runtime/registry.py (name -> "module:Class"). Adding one
(Kubernetes, a multi-node Ray) is that module plus one registry line; `--runtime NAME`, the state's
`runtime` field and every command follow from the registry. The class is built without arguments.

What the commands do around it, the same for every runtime: the pre-flight (drift, doctor, port, model,
key file, GPU memory), the start lock, state.json (runtime/state.py: `up` writes it before `start`, the
runtime's keeper adds pid / exit_code), readiness (/health and /v1/models, runtime/wait.py), the stamped
log format (runtime/logstamp.py) and the failure classification (runtime/classify.py).

The interface (a typing.Protocol: nothing to inherit):

    name: str                                the registry's name, written into state.json's `runtime`
    start_options: frozenset[str]            the `up` options it takes besides the common ones ("python", "image")
    prepare(dep, options) -> Prepared        runtime checks before anything starts: findings (an ERROR among them
                                             refuses `up` at once, before the doctor) and the state fields to
                                             record (the process runtime: the vLLM python it resolved)
    start(dep, prepared, log_path) -> Started
                                             start the server detached, its output stamped into log_path; the
                                             keeper (supervisor / log pump) is the Popen `up` waits on and whose
                                             pid is recorded; every process it starts must carry the marker env
                                             (state.MARKER_ENV = deployment_marker(build_dir)): that is how
                                             `down` proves what is the deployment's
    stop(request) -> StopReport              stop it all and prove nothing is left (stop.stop_deployment does the
                                             marker sweep, the port and the GPU check); request.record is only
                                             the state's trusted part
    is_live(build_dir, record, trusted) -> bool
                                             cheap: its keeper or server process is provably alive (polled by
                                             `up` while waiting, asked before a second `up`)
    facts(build_dir, record, trusted) -> RuntimeFacts
                                             what runs now, for `status` and `logs -f`: live, the processes,
                                             runtime-specific facts (the container)
    inspect(build_dir, record, secret) -> {archive path: content}
                                             what a bundle records of what this runtime runs (docker: the engine's
                                             info and the record's container), every value that may be a secret
                                             (a container's environment) passed through secret(); Unavailable
                                             (the reason) when it has nothing to show here
    logs(build_dir) -> Path                  the current run's stamped log
    adopts(build_dir) -> bool                (classmethod) `down --force` without a usable state: whether this
                                             runtime may have left something there (the registry asks the
                                             non-default runtimes first)
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tqdeploy.findings import Finding

if TYPE_CHECKING:
    from tqdeploy.runtime.deployment import Deployment
    from tqdeploy.runtime.marker import Trusted
    from tqdeploy.runtime.procs import Proc
    from tqdeploy.runtime.record import StateRecord
    from tqdeploy.runtime.stop import StopReport


@dataclass
class StartOptions:
    """What `up` was asked for that a runtime may use (each runtime lists the ones it takes)."""

    python: str | None = None
    image: str | None = None


@dataclass
class Prepared:
    findings: list[Finding] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)  # state fields to write with the new state
    data: dict[str, Any] = field(default_factory=dict)  # the runtime's own, handed back to start()


@dataclass
class Started:
    keeper: subprocess.Popen  # the detached supervisor / log pump: its pid is state.json's supervisor_pid
    pgid: int  # the process group it leads
    record: dict[str, Any] = field(default_factory=dict)  # more state fields (the docker runtime: container_id, pid)


@dataclass
class StopRequest:
    build_dir: Path
    record: StateRecord  # the state's trusted part only (empty for a state copied from another folder)
    trusted: Trusted
    grace: float
    force: bool = False
    host: str | None = None  # the address whose port must be free afterwards (None: not checked)
    port: int | None = None
    gpu_baseline: list[dict[str, Any]] | None = None


@dataclass
class RuntimeFacts:
    live: bool
    processes: list[Proc] = field(default_factory=list)
    extra: dict[str, Any] | None = None  # status's "container" (docker); None where a runtime has none


class Unavailable(Exception):
    """What a runtime was asked to show is not on this host (no engine answers, nothing of its own to record)."""


class Runtime(Protocol):
    name: str
    start_options: frozenset[str]

    def prepare(self, dep: Deployment, options: StartOptions) -> Prepared: ...

    def start(self, dep: Deployment, prepared: Prepared, log_path: Path) -> Started: ...

    def stop(self, request: StopRequest) -> StopReport: ...

    def is_live(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> bool: ...

    def facts(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> RuntimeFacts: ...

    def inspect(self, build_dir: Path, record: StateRecord, secret: Callable[[str], str]) -> dict[str, Any]: ...

    def logs(self, build_dir: Path) -> Path: ...

    @classmethod
    def adopts(cls, build_dir: Path) -> bool: ...
