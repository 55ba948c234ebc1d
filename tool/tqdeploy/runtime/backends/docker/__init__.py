"""The docker runtime: the built image as a container (runtime/container.py), its output stamped by a
detached log pump (runtime/dockerpump.py), which is the keeper and carries the deployment marker."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.runtime import procs, state
from tqdeploy.runtime.base import Prepared, RuntimeFacts, Started, StartOptions, StopRequest, Unavailable
from tqdeploy.runtime.classify import AREA
from tqdeploy.runtime.deployment import Deployment
from tqdeploy.runtime.marker import Trusted
from tqdeploy.runtime.process_runtime import keeper_alive
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.stop import StopReport, stop_deployment


def docker_here() -> bool:
    return os.path.exists("/var/run/docker.sock") or bool(os.environ.get("DOCKER_HOST"))


def stop_container(record: StateRecord, grace: float, force: bool, build_dir: Path) -> dict[str, Any]:
    """The deployment's container: by the state's id, or with --force by the deployment label (an engine
    that does not answer then has nothing of it to stop)."""
    from tqdeploy.runtime.container import LABEL, client
    from tqdeploy.runtime.container import stop_container as stop_by_id

    cid = record.container_id
    if not cid and not (force and docker_here()):
        return {}
    if not cid:
        try:
            engine = client()
        except TQError:
            return {}
        found = engine.containers.list(all=True, filters={"label": f"{LABEL}={state.deployment_marker(build_dir)}"})
        if not found:
            return {}
        cid = found[0].id
    return stop_by_id(cid, grace) | {"id": cid}


ENGINE_TIMEOUT_S = 5  # a bundle waits this long for an engine, not client()'s 60 s of a start


def engine_evidence(container_id: str | None, secret: Callable[[str], str]) -> dict[str, Any]:
    """`docker info`, and the container inspected with every environment value passed through secret()."""
    import docker

    try:
        engine = docker.from_env(timeout=ENGINE_TIMEOUT_S)
        info = engine.info()
    except docker.errors.DockerException as exc:
        raise Unavailable(f"no Docker engine answers ({str(exc)[:200]})") from None
    out: dict[str, Any] = {"docker/info.json": info}
    if container_id:
        try:
            inspect = engine.api.inspect_container(container_id)
        except docker.errors.DockerException as exc:
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


class DockerRuntime:
    name = "docker"
    start_options = frozenset({"image"})

    def prepare(self, dep: Deployment, options: StartOptions) -> Prepared:
        from tqdeploy.runtime.container import engine_limits, ulimits_for_engine

        ulimits, capped = ulimits_for_engine(engine_limits())
        out = Prepared(data={"ulimits": ulimits, "image": options.image})
        if capped:
            out.findings.append(
                Finding(
                    "TQ423",
                    Severity.WARN,
                    "container ulimits capped at the Docker engine's own hard limits",
                    capped,
                    "raise dockerd's limits (systemd: LimitMEMLOCK=infinity, LimitNOFILE=1048576 in docker.service, "
                    "then restart docker): vLLM pins host memory and opens many files",
                    AREA,
                )
            )
        return out

    def start(self, dep: Deployment, prepared: Prepared, log_path: Path) -> Started:
        from tqdeploy.runtime.container import container_facts, start_container
        from tqdeploy.runtime.process import pump_env

        image, ulimits = prepared.data["image"], prepared.data["ulimits"]
        container, pump = start_container(dep, image, log_path, pump_env(dep.build_dir), ulimits)
        pid = (container_facts(container.id) or {}).get("pid")
        return Started(pump, pump.pid, {"container_id": container.id, "pid": pid})

    def stop(self, request: StopRequest) -> StopReport:
        container = stop_container(request.record, request.grace, request.force, request.build_dir)
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

    def is_live(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> bool:
        return keeper_alive(record, trusted)

    def facts(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> RuntimeFacts:
        from tqdeploy.runtime.container import container_facts

        container = None
        if record.container_id:
            try:
                container = container_facts(record.container_id)
            except Exception:  # no engine: the container cannot be live as far as we can tell
                container = None
        live = bool(container and container["status"] == "running")
        members = procs.deployment_procs(trusted.marker, trusted.started_at) if live else []
        return RuntimeFacts(live, members, container)

    def inspect(self, build_dir: Path, record: StateRecord, secret: Callable[[str], str]) -> dict[str, Any]:
        return engine_evidence(record.container_id, secret)

    def logs(self, build_dir: Path) -> Path:
        return state.current_log(build_dir)

    @classmethod
    def adopts(cls, build_dir: Path) -> bool:
        return docker_here()
