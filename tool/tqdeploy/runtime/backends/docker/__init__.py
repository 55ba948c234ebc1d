"""The docker runtime: the built image as a container (container.py), its output stamped by a detached log pump
(pump.py), which is the keeper and carries the deployment marker. Its own section of the state is the container's
id (DockerState); status shows the container, a bundle the engine's info and the container inspected."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from tqdeploy.adaptors import docker
from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.runtime import procs
from tqdeploy.runtime.backends.docker.container import (
    LABEL,
    client,
    container_facts,
    engine_limits,
    start_container,
    stop_container,
    ulimits_for_engine,
)
from tqdeploy.runtime.base import Prepared, RuntimeBase, RuntimeFacts, Started, StartOptions, StopRequest, Unavailable
from tqdeploy.runtime.classify import AREA
from tqdeploy.runtime.deployment import Deployment
from tqdeploy.runtime.detached import keeper_env
from tqdeploy.runtime.folderid import deployment_marker
from tqdeploy.runtime.marker import Trusted
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.statefields import Check, SectionState, matching
from tqdeploy.runtime.stop import StopReport, stop_deployment

_CONTAINER_ID = matching(re.compile(r"^[0-9a-f]{12,64}\Z"), "a Docker container id (12-64 hex digits)")
ENGINE_TIMEOUT_S = 5  # a bundle waits this long for an engine, not client()'s 60 s of a start


@dataclass(frozen=True)
class DockerState(SectionState):
    """state["backend"] of the docker runtime: the container `up` started."""

    container_id: str | None = None
    legacy_fields: ClassVar[frozenset[str]] = frozenset({"container_id"})  # written flat before the section existed
    checks: ClassVar[Mapping[str, Check]] = {"container_id": _CONTAINER_ID}


@dataclass(frozen=True)
class DockerPlan:
    """What prepare() hands start(): the image asked for (None: the lock's tag) and the ulimits the engine allows."""

    image: str | None
    ulimits: dict[str, int]


def recorded_container(record: StateRecord) -> str | None:
    own = record.backend
    return own.container_id if isinstance(own, DockerState) else None


def docker_here() -> bool:
    return os.path.exists("/var/run/docker.sock") or bool(os.environ.get("DOCKER_HOST"))


def stop_own_container(record: StateRecord, grace: float, force: bool, build_dir: Path) -> dict[str, Any]:
    """The deployment's container: by the state's id, or with --force by the deployment label (an engine
    that does not answer then has nothing of it to stop)."""
    cid = recorded_container(record)
    if not cid and not (force and docker_here()):
        return {}
    if not cid:
        try:
            engine = client()
        except TQError:
            return {}
        found = engine.containers.list(all=True, filters={"label": f"{LABEL}={deployment_marker(build_dir)}"})
        if not found:
            return {}
        cid = str(found[0].id)
    return stop_container(cid, grace) | {"id": cid}


def engine_evidence(container_id: str | None, secret: Callable[[str], str]) -> dict[str, Any]:
    """`docker info`, and the container inspected with every environment value passed through secret()."""
    try:
        engine = docker.from_env(timeout=ENGINE_TIMEOUT_S)
        info = engine.info()
    except (ImportError, docker.sdk_error()) as exc:
        raise Unavailable(f"no Docker engine answers ({str(exc)[:200]})") from None
    out: dict[str, Any] = {"docker/info.json": info}
    if container_id:
        try:
            inspect = engine.api.inspect_container(container_id)
        except docker.sdk_error() as exc:
            inspect = {"error": str(exc)[:300]}
        env = (inspect.get("Config") or {}).get("Env") or []
        if env:  # NAME=VALUE: any value may be a token, whatever its name
            inspect["Config"]["Env"] = [_masked(entry, secret) for entry in env]
        out["docker/container.json"] = inspect
    engine.close()
    return out


def _masked(entry: str, secret: Callable[[str], str]) -> str:
    name, sep, value = entry.partition("=")
    return f"{name}{sep}{secret(value)}" if value else entry


def _capped_finding(capped: dict[str, dict[str, int]]) -> Finding:
    return Finding(
        "TQ423",
        Severity.WARN,
        "container ulimits capped at the Docker engine's own hard limits",
        capped,
        "raise dockerd's limits (systemd: LimitMEMLOCK=infinity, LimitNOFILE=1048576 in docker.service, "
        "then restart docker): vLLM pins host memory and opens many files",
        AREA,
    )


class DockerRuntime(RuntimeBase):
    name = "docker"
    start_options = frozenset({"image"})
    state_type = DockerState

    @classmethod
    def adopts(cls, build_dir: Path) -> bool:
        return docker_here()

    def prepare(self, dep: Deployment, options: StartOptions) -> Prepared:
        ulimits, capped = ulimits_for_engine(engine_limits())
        out = Prepared(plan=DockerPlan(options.image, ulimits))
        if capped:
            out.findings.append(_capped_finding(capped))
        return out

    def start(self, dep: Deployment, prepared: Prepared, log_path: Path) -> Started:
        plan = prepared.plan
        if not isinstance(plan, DockerPlan):
            raise TypeError("start() was handed another runtime's Prepared")
        container, pump = start_container(dep, plan.image, log_path, keeper_env(dep.build_dir), plan.ulimits)
        pid = (container_facts(container.id) or {}).get("pid")
        return Started.detached(pump, pid=pid, backend=DockerState(str(container.id)))

    def stop(self, request: StopRequest) -> StopReport:
        container = stop_own_container(request.record, request.grace, request.force, request.build_dir)
        report = stop_deployment(
            request.build_dir,
            request.record.pgid,
            request.grace,
            server_pid=None,  # the container's own pid is the engine's, not a process `down` signals
            host=request.host,
            port=request.port,
            gpu_baseline=request.gpu_baseline,
            trusted=request.trusted,
        )
        if container.get("found"):
            report.others.append({"container_id": container["id"], "title": "container"})
        return report

    def facts(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> RuntimeFacts:
        cid = recorded_container(record)
        container = None
        if cid:
            try:
                container = container_facts(cid)
            except Exception:  # no engine: the container cannot be live as far as we can tell
                container = None
        live = bool(container and container["status"] == "running")
        members = procs.deployment_procs(trusted.marker, trusted.started_at) if live else []
        lines = (
            [f"container {cid[:12]}: {container['status']}, health {container['health'] or 'not set'}"]
            if cid and container
            else []
        )
        return RuntimeFacts(live, members, {"container": container}, [], lines)

    def inspect(self, build_dir: Path, record: StateRecord, secret: Callable[[str], str]) -> dict[str, Any]:
        return engine_evidence(recorded_container(record), secret)
