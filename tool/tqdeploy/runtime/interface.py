"""The runtime interface's types: the Protocol `Runtime` and the data passed to and from it (runtime/base.py
documents each member and gives its default). Apart from base.py so that the registry, and the state validation
that asks it for a runtime's section, can name the interface without importing the defaults (which read state).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from tqdeploy.findings import Finding
from tqdeploy.runtime.deployment import Deployment
from tqdeploy.runtime.marker import Trusted
from tqdeploy.runtime.procs import Proc
from tqdeploy.runtime.record import BackendState, StateRecord
from tqdeploy.runtime.stop import StopReport


@dataclass(frozen=True)
class StartOptions:
    """What `up` was asked for that a runtime may use (each runtime lists the ones it takes), and the state the
    command loaded once (None: none, or not this folder's own)."""

    python: str | None = None
    image: str | None = None
    previous: StateRecord | None = None


@dataclass
class Prepared:
    findings: list[Finding] = field(default_factory=list)
    backend: BackendState | None = None  # the runtime's section to record with the new state
    plan: object = None  # the runtime's own hand-over to start() (it checks the type it put there)


@dataclass
class Started:
    keeper: subprocess.Popen[bytes] | None = None  # a local keeper (state's supervisor_pid); None: none here
    pgid: int | None = None  # the process group it leads; None where nothing runs in a local group
    pid: int | None = None  # the server's pid when the runtime knows it at start (the keeper records it otherwise)
    backend: BackendState | None = None  # the section after start (docker: the container id); None: prepare's

    @classmethod
    def detached(cls, keeper: subprocess.Popen[bytes], **more: Any) -> Started:
        """A keeper started in its own session (runtime/detached.py) leads the group of everything it starts."""
        return cls(keeper, keeper.pid, **more)


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
    extra: dict[str, Any] = field(default_factory=dict)  # status's extra keys (docker: "container"; "nodes")
    findings: list[Finding] = field(default_factory=list)  # what those extras say is wrong (a dead worker node)
    # status's human view of those extras, written by the runtime that knows them: the core prints them as they are
    lines: list[str] = field(default_factory=list)


class Unavailable(Exception):
    """What a runtime was asked to show is not on this host (no engine answers, nothing of its own to record)."""


class Runtime(Protocol):
    name: ClassVar[str]
    start_options: ClassVar[frozenset[str]]
    state_type: ClassVar[type[BackendState]]
    stands_in_for: ClassVar[str | None]

    @classmethod
    def takes(cls, build_dir: Path) -> bool: ...

    @classmethod
    def adopts(cls, build_dir: Path) -> bool: ...

    def prepare(self, dep: Deployment, options: StartOptions) -> Prepared: ...

    def preflight(self, dep: Deployment) -> list[Finding]: ...

    def start(self, dep: Deployment, prepared: Prepared, log_path: Path) -> Started: ...

    def failed(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> Finding | None: ...

    def is_live(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> bool: ...

    def facts(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> RuntimeFacts: ...

    def other_groups(self, build_dir: Path, trusted: Trusted) -> list[int]: ...

    def stop(self, request: StopRequest) -> StopReport: ...

    def inspect(self, build_dir: Path, record: StateRecord, secret: Callable[[str], str]) -> dict[str, Any]: ...

    def logs(self, build_dir: Path) -> Path: ...
