"""The docker runtime: the built image as a container with the spec's settings, through the Docker SDK.

Mirrors the rendered compose.yaml: ipc=host (NCCL/PyTorch shared memory; Docker's default /dev/shm is 64
MiB), memlock unlimited and nofile 65536, TQ_BIND_HOST=0.0.0.0 inside with the port published on the spec's
address only, the model directory read-only at its container path, the cache volume at /cache, the API
key file read-only at /run/secrets/vllm-api-key (never in env or argv), the spec's GPUs as a device request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tqdeploy.adaptors import docker
from tqdeploy.buildfolder import folder, read_lock
from tqdeploy.deployspec.model import CONTAINER_API_KEY
from tqdeploy.errors import TQError
from tqdeploy.runtime.deployment import Deployment
from tqdeploy.runtime.detached import spawn_detached
from tqdeploy.runtime.folderid import MARKER_ENV, deployment_marker
from tqdeploy.runtime.procs import PROC, read_proc

LABEL = "io.tqdeploy.deployment"


def client() -> Any:  # docker.DockerClient (the SDK's objects are Any at this boundary)
    try:
        c = docker.from_env(timeout=60)
        c.ping()
        return c
    except Exception as err:
        raise TQError(
            f"no Docker engine reachable ({type(err).__name__}: {str(err)[:160]})",
            "start dockerd (or set DOCKER_HOST), or use --runtime process",
        ) from None


def image_ref(dep: Deployment, image: str | None) -> str:
    return image or str(read_lock(dep.build_dir)["image_tag"])


WANTED_ULIMITS = {"memlock": -1, "nofile": 65536}  # as compose.yaml renders them
_PROC_LIMITS = {"memlock": "Max locked memory", "nofile": "Max open files"}


def engine_limits() -> dict[str, int] | None:
    """The local dockerd's own hard limits (a container cannot get more: "error setting rlimit ... not
    permitted"); None when no local dockerd process is visible (a remote engine)."""
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            proc = read_proc(int(entry.name))
            if proc is not None and proc.title in ("dockerd", "/usr/bin/dockerd", "/usr/sbin/dockerd"):
                try:
                    text = (entry / "limits").read_text()
                except OSError:
                    return None
                out = {}
                for key, label in _PROC_LIMITS.items():
                    for line in text.splitlines():
                        if line.startswith(label):
                            hard = line[len(label) :].split()[1]
                            out[key] = -1 if hard == "unlimited" else int(hard)
                return out
    return None


def ulimits_for_engine(limits: dict[str, int] | None) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """The spec's ulimits, capped at the engine's own hard limits; (values, what was capped)."""
    values, capped = dict(WANTED_ULIMITS), {}
    for key, wanted in WANTED_ULIMITS.items():
        have = (limits or {}).get(key, -1)
        if have != -1 and (wanted == -1 or wanted > have):
            values[key] = have
            capped[key] = {"wanted": wanted, "engine_hard_limit": have}
    return values, capped


CONTAINER_UID = 2000  # the rendered Dockerfile's USER 2000:0


def prepare_cache(cache: Path) -> None:
    """The bind-mounted cache replaces the image's /cache (owned by 2000:0): give the host folder to that uid
    when we can (root), so vLLM can write its compile cache there; otherwise its owner must already be 2000."""
    for path in (cache, cache / "vllm", cache / "huggingface"):
        path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0 and path.stat().st_uid != CONTAINER_UID:
            os.chown(path, CONTAINER_UID, 0)


def run_options(dep: Deployment, image: str, ulimits: dict[str, int] | None = None) -> dict[str, Any]:
    spec = dep.spec
    res = spec.resources
    marker = deployment_marker(dep.build_dir)
    cache = dep.build_dir / str(spec.storage.cache_dir)
    prepare_cache(cache)
    volumes = {
        str(dep.model_dir): {"bind": spec.container_model_path, "mode": "ro"},
        str(cache.resolve()): {"bind": "/cache", "mode": "rw"},
    }
    if dep.api_key_file is not None:
        volumes[str(dep.api_key_file)] = {"bind": CONTAINER_API_KEY, "mode": "ro"}
    options: dict[str, Any] = {
        "image": image,
        "name": f"tqdeploy-{spec.name}-{marker[:8]}",
        "detach": True,
        "ipc_mode": "host",
        "ulimits": [docker.ulimit(k, v) for k, v in (ulimits or WANTED_ULIMITS).items()],
        "environment": {"TQ_BIND_HOST": "0.0.0.0", MARKER_ENV: marker},
        "ports": {f"{dep.port}/tcp": (dep.host, dep.port)},
        "volumes": volumes,
        "labels": {LABEL: marker, "io.tqdeploy.build-dir": str(dep.build_dir)},
    }
    gpus = res.gpus
    if spec.variant == "gpu" and gpus:
        options["device_requests"] = [docker.gpu_request(None if gpus == "all" else [str(g) for g in gpus])]
    return options


def start_container(
    dep: Deployment, image: str | None, log_path: Path, env: dict[str, str], ulimits: dict[str, int] | None = None
) -> tuple[Any, subprocess.Popen[bytes]]:
    """(container, log pump process)."""
    c = client()
    ref = image_ref(dep, image)
    try:
        c.images.get(ref)
    except Exception:
        raise TQError(
            f"image {ref} is not on this Docker engine",
            f"build it: `tqdeploy build --out {dep.build_dir} --image` (or pass --image TAG)",
        ) from None
    for old in c.containers.list(all=True, filters={"label": f"{LABEL}={deployment_marker(dep.build_dir)}"}):
        old.remove(force=True)  # a stopped container of an earlier run holds the name
    try:
        container = c.containers.run(**run_options(dep, ref, ulimits))
    except Exception as refused:  # docker.errors.APIError: the engine refused the container
        raise TQError(
            f"the Docker engine refused the container: {str(refused)[-300:]}",
            "fix what the engine names (GPU runtime: `tqdeploy doctor`, TQ120), or use --runtime process",
        ) from None
    argv = [sys.executable, "-m", "tqdeploy.runtime.backends.docker.pump", str(dep.build_dir), str(log_path)]
    pump = spawn_detached([*argv, container.id], env, folder(dep.build_dir).supervisor_err)
    return container, pump


def container_facts(container_id: str) -> dict[str, Any] | None:
    try:
        c = client().containers.get(container_id)
    except Exception:
        return None
    return {
        "status": c.status,
        "pid": c.attrs["State"].get("Pid") or None,  # Docker says 0 once the container has exited
        "health": (c.attrs["State"].get("Health") or {}).get("Status"),
    }


def stop_container(container_id: str, grace: float) -> dict[str, Any]:
    """docker stop (SIGTERM, SIGKILL after grace), then remove; what happened."""
    try:
        c = client().containers.get(container_id)
    except Exception:
        return {"found": False}
    was = c.status
    c.stop(timeout=int(grace))
    code = c.wait(timeout=30)["StatusCode"]
    c.remove(force=True)
    return {"found": True, "status_before": was, "exit_code": code}


def describe(options: dict[str, Any]) -> str:
    """The run options without objects (for logs/tests)."""
    return json.dumps({k: v for k, v in options.items() if k not in ("ulimits", "device_requests")}, default=str)
