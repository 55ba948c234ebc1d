"""Docker engine, NVIDIA runtime, CDI specs and the NVIDIA Container Toolkit.

The engine is asked `GET /info` (Docker Engine API) over its unix socket directly: importing the Docker
SDK (and requests with it) took ~55 ms of the doctor's ~0.35 s here. A DOCKER_HOST that is not unix://
(tcp://, ssh://) goes through the Docker SDK, which is optional on a GPU host: when it is missing the
engine part records why and the rest (CDI spec dirs, nvidia-ctk on PATH) is still read.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tqdeploy.adaptors.docker import sdk as docker_sdk

# Where CDI specs live (CDI spec, container-device-interface SPEC.md: /etc/cdi and /var/run/cdi).
CDI_DIRS = ("etc/cdi", "var/run/cdi")
ENGINE_TIMEOUT_S = 2
DEFAULT_SOCKET = "/var/run/docker.sock"  # the Docker SDK's and CLI's default (docker/constants.py)
RAW_CLIENT = "engine API over the unix socket"


class _UnixInfoClient:
    """The one call the probe makes, GET /info, as docker.from_env().info() would answer it."""

    def __init__(self, path: str, timeout: float) -> None:
        self.path, self.timeout = path, timeout

    def info(self) -> dict[str, Any]:
        conn = http.client.HTTPConnection("localhost", timeout=self.timeout)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.path)
            conn.sock = sock
            conn.request("GET", "/info", headers={"Host": "docker"})
            resp = conn.getresponse()
            body = resp.read(4 << 20)
        finally:
            conn.close()
            sock.close()
        if resp.status != 200:
            raise ConnectionError(f"GET /info answered {resp.status} {resp.reason}")
        data = json.loads(body)
        if not isinstance(data, dict):
            raise ValueError("GET /info did not answer a JSON object")
        return data


def _unix_socket(env: Mapping[str, str] = os.environ) -> str | None:
    host = env.get("DOCKER_HOST") or ""
    if not host:
        return DEFAULT_SOCKET
    return host[len("unix://") :] if host.startswith("unix://") else None


def probe_docker(
    root: Path = Path("/"),
    client_factory: Callable[[], Any] | None = None,  # a Docker SDK client (adaptors/docker.py), untyped
    which: Callable[[str], str | None] = shutil.which,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "sdk": None,
        "reachable": False,
        "error": "",
        "server_version": None,
        "runtimes": [],
        "default_runtime": None,
        "cdi_specs": {},
        "nvidia_ctk": which("nvidia-ctk"),
        "docker_cli": which("docker"),
    }
    for rel in CDI_DIRS:
        d = Path(root) / rel
        if d.is_dir():
            out["cdi_specs"]["/" + rel] = sorted(p.name for p in d.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
    if client_factory is None and (sock := _unix_socket()) is not None:
        out["sdk"] = RAW_CLIENT
        client_factory = lambda: _UnixInfoClient(sock, ENGINE_TIMEOUT_S)  # noqa: E731
    if client_factory is None:
        try:
            docker = docker_sdk()
        except ImportError:
            out["error"] = "the docker Python SDK is not installed"
            return out
        out["sdk"] = getattr(docker, "__version__", "")
        client_factory = lambda: docker.from_env(timeout=ENGINE_TIMEOUT_S)  # noqa: E731
    try:
        client = client_factory()
        try:
            info = client.info()
        finally:
            close = getattr(client, "close", None)
            if callable(close):
                close()
    except Exception as exc:  # DockerException, connection refused, permission denied, timeout
        out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
        return out
    out["reachable"] = True
    out["server_version"] = info.get("ServerVersion")
    out["runtimes"] = sorted((info.get("Runtimes") or {}).keys())
    out["default_runtime"] = info.get("DefaultRuntime")
    out["cdi_spec_dirs_engine"] = info.get("CDISpecDirs")
    return out
