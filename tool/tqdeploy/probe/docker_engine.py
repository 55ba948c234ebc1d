"""Docker engine, NVIDIA runtime, CDI specs and the NVIDIA Container Toolkit.

The Docker SDK is optional on a GPU host: when it is missing the engine part records why and the
rest (CDI spec dirs, nvidia-ctk on PATH) is still read.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

# Where CDI specs live (CDI spec, container-device-interface SPEC.md: /etc/cdi and /var/run/cdi).
CDI_DIRS = ("etc/cdi", "var/run/cdi")
ENGINE_TIMEOUT_S = 2


def probe_docker(root: Path = Path("/"), client_factory=None, which=shutil.which) -> dict[str, Any]:
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
    if client_factory is None:
        try:
            import docker
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
