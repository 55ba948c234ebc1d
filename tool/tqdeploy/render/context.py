"""The values templates see: the validated spec plus what is derived from it, computed once here."""

from __future__ import annotations

from typing import Any

from tqdeploy import __version__
from tqdeploy.deployspec.accel import Accelerators
from tqdeploy.deployspec.command import VllmCommand
from tqdeploy.deployspec.model import (
    CONTAINER_API_KEY,
    CONTAINER_HF_HOME,
    CONTAINER_MODELS,
    CONTAINER_VLLM_CACHE,
    Spec,
)
from tqdeploy.deployspec.validate import revision_is_commit
from tqdeploy.render.cacheimport import cache_import_context
from tqdeploy.render.caches import FINGERPRINT_FILE, FINGERPRINT_SCHEMA, moved_caches
from tqdeploy.render.env import shquote
from tqdeploy.render.fingerprint import CacheFingerprint
from tqdeploy.render.multinode import multinode_context, record_text

PATHS = {
    "models": CONTAINER_MODELS,
    "cache_root": "/cache",
    "vllm_cache": CONTAINER_VLLM_CACHE,
    "hf_home": CONTAINER_HF_HOME,
    "api_key": CONTAINER_API_KEY,
    # A Secret volume replaces its mount point: not /run/secrets, which may hold the service account.
    "k8s_api_key_dir": "/etc/tqdeploy/secrets",
    "k8s_api_key": "/etc/tqdeploy/secrets/" + CONTAINER_API_KEY.rsplit("/", 1)[1],
    "api_key_name": CONTAINER_API_KEY.rsplit("/", 1)[1],
}


def image_ref(spec: Spec) -> str:
    base, digest = spec.image.base, spec.image.digest
    return f"{base}@{digest}" if digest else base


def image_tag(spec: Spec) -> str:
    return f"tqdeploy/{spec.name}:{spec.short_hash}"


# The launcher's words as serve.sh writes them: the model and the rendered launcher where serve.sh finds them.
SHELL_WORDS = {"launch_vllm.py": '"$HERE/launch_vllm.py"'}


def command_lines(spec: Spec, command: VllmCommand) -> list[str]:
    """The exec line of serve.sh, one flag per line; every value shell-quoted. The launcher is the command's
    (deployspec/command.py decides it once), with the model at "$MODEL_DIR"."""
    shell = {**SHELL_WORDS, spec.container_model_path: '"$MODEL_DIR"'}
    head = "exec " + " ".join(shell.get(word, word) for word in command.launcher)
    flags = command.flags
    words: list[str] = []
    i = 0
    while i < len(flags):
        flag = flags[i]
        if flag.startswith("-") and i + 1 < len(flags) and not flags[i + 1].startswith("--"):
            words.append(f"{flag} {shquote(flags[i + 1])}")
            i += 2
        else:
            words.append(shquote(flag))
            i += 1
    words += ['--host "$BIND_HOST"', f"--port {command.port}"]
    if spec.multi_node:  # the node flags multinode.sh sets (render/multinode.py)
        words.append('"$@"')
    lines = [head + " \\"]
    lines += [f"  {w} \\" for w in words[:-1]]
    lines.append(f"  {words[-1]}")
    return lines


# Releases whose GPU build starts the EngineCore from the forkserver: where it was measured on a GPU host (0.25.0
# on the H200, 4 alternated pairs: warm start median 32.1 s against plain `vllm serve`'s 49.9 s, tokens/s within
# the spread of plain's own starts; docs/startup.md). 0.32.0 cannot run on the lent H200 (its wheel needs torch
# 2.13): its route is tested on the CPU build only, so its GPU builds keep vLLM's spawn until measured.
FORKSERVER_MEASURED = frozenset({"0.25.0"})


def engine_start(spec: Spec) -> str:
    """How launch_vllm.py starts the EngineCore (templates/launch_vllm.py.j2): the forkserver on a single-node GPU
    build of a release measured with it; otherwise what `vllm serve` does, spawn. The CPU build stays on spawn:
    vLLM's CPU platform forces spawn itself (vllm/platforms/cpu.py check_and_update_config), and on Ray the
    engine's workers are Ray actors, not measured with the forkserver."""
    measured = spec.vllm_version in FORKSERVER_MEASURED
    return "forkserver" if measured and spec.variant != "cpu" and not spec.multi_node else "spawn"


def gpustack_params(command: VllmCommand) -> list[str]:
    """The validated vLLM flags as --flag=value words for GPUStack's Backend Parameters.

    --served-model-name is left out: GPUStack passes its own {{model_name}} in the run command.
    """
    flags = command.flags
    params: list[str] = []
    i = 0
    while i < len(flags):
        flag = flags[i]
        has_value = i + 1 < len(flags) and not flags[i + 1].startswith("--")
        if flag != "--served-model-name":
            params.append(f"{flag}={flags[i + 1]}" if has_value and "=" not in flag else flag)
        i += 2 if has_value else 1
    return params


def bracket(host: str) -> str:
    """An address as it goes before :port (IPv6 in brackets, as nginx, Prometheus and Docker want it)."""
    return f"[{host}]" if ":" in host else host


def k8s_size(size: str) -> str:
    """Docker-style 16g -> Kubernetes 16Gi."""
    units = {"k": "Ki", "m": "Mi", "g": "Gi"}
    unit = size[-1].lower()
    return size[:-1] + units[unit] if unit in units else size


def _gpustack(spec: Spec, command: VllmCommand) -> dict[str, Any]:
    """GPUStack's custom backend entry: its name, version and the command's parameters."""
    return {
        "backend_name": f"tqdeploy-{spec.name}-custom",
        "version": f"v{spec.vllm_version}-custom",
        "params": gpustack_params(command),
    }


def build_context(
    spec: Spec, command: VllmCommand, fingerprint: CacheFingerprint, accel: Accelerators
) -> dict[str, Any]:
    """What the templates see: the typed sections (jinja reads their attributes) and what is derived from them.
    command and fingerprint are the build's one vLLM command and cache fingerprint (render_files)."""
    m, srv, res = spec.model, spec.server, spec.resources
    replicas_total = res.replicas * res.nodes
    host = srv.host
    multinode = multinode_context(spec)
    return {
        "tool_version": __version__,
        "name": spec.name,
        "variant": spec.variant,
        "spec_hash": spec.spec_hash,
        "short_hash": spec.short_hash,
        "vllm_version": spec.vllm_version,
        "engine_start": engine_start(spec),
        "vllm": spec.vllm,
        "model": m,
        "model_label": m.repo and f"{m.repo}@{m.revision}" or m.served_name,
        "served_name": m.served_name,
        "model_dir_name": spec.model_dir_name,
        "container_model_path": spec.container_model_path,
        "revision_pinned": revision_is_commit(m.revision),
        "base": spec.image.base,
        "digest": spec.image.digest,
        "image_ref": image_ref(spec),
        "image_tag": image_tag(spec),
        "server": srv,
        "host": host,
        "port": srv.port,
        # Where a proxy or Prometheus on the same host reaches the API.
        "upstream_host": "127.0.0.1" if host in ("0.0.0.0", "::") else bracket(host),
        "publish_host": bracket(host),
        "api_key": bool(srv.api_key_file),
        "resources": res,
        "gpus": res.gpus,
        "gpus_per_pod": spec.vllm.tensor_parallel_size,
        "nodes": res.nodes,
        "multi_node": spec.multi_node,
        "multinode": multinode,
        "multinode_record": record_text(multinode),
        "shm_size_k8s": k8s_size(res.shm_size),
        "storage": spec.storage,
        "paths": PATHS,
        "command_lines": command_lines(spec, command),
        "accel": accel,
        "start_caches": moved_caches(),
        "fingerprint": fingerprint.sha256,
        "cache_import": cache_import_context(spec, PATHS, fingerprint),  # storage.cache_artifact: render/cacheimport.py
        "fingerprint_file": FINGERPRINT_FILE,
        "fingerprint_schema": FINGERPRINT_SCHEMA,
        "gpustack": _gpustack(spec, command),
        "start_period": "20m" if spec.variant == "gpu" else "10m",
        "startup_failure_threshold": 120 if spec.variant == "gpu" else 60,
        "access_mode": "ReadWriteMany" if replicas_total > 1 else "ReadWriteOnce",
        "access_reason": ("several pods mount the volumes" if replicas_total > 1 else "one pod mounts the volumes"),
    }
