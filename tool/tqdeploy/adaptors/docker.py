"""The Docker SDK (docker-py), the one module of tqdeploy that imports it: inside its functions, so importing this
adaptor costs nothing and a host without the SDK fails only where a command needs an engine."""

from __future__ import annotations

from types import ModuleType
from typing import Any


def sdk() -> ModuleType:
    """The `docker` package itself (ImportError where it is not installed)."""
    import docker

    return docker


def from_env(timeout: int | None) -> Any:  # docker.DockerClient: Any, as the SDK's own objects are at this boundary
    """A client for the engine DOCKER_HOST (or the local socket) names; it connects on first use. timeout None: no
    read timeout (docker-py hands it to requests, which takes None; types-docker declares int only)."""
    return sdk().from_env(timeout=timeout)


def sdk_error() -> type[Exception]:
    """docker.errors.DockerException: what every SDK call raises for an engine that refused or did not answer."""
    error: type[Exception] = sdk().errors.DockerException
    return error


def ulimit(name: str, limit: int) -> object:
    """A container ulimit with soft = hard = limit (-1: unlimited)."""
    return sdk().types.Ulimit(name=name, soft=limit, hard=limit)


def gpu_request(device_ids: list[str] | None) -> object:
    """A GPU device request: the listed GPUs, or every GPU for None.

    device_ids=None is docker-py's "not set" (types/containers.py DeviceRequest: `if device_ids is None`), which
    types-docker declares as list[str] only."""
    count = -1 if device_ids is None else 0
    return sdk().types.DeviceRequest(count=count, device_ids=device_ids, capabilities=[["gpu"]])
