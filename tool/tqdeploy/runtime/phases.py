"""The start-up phase a vLLM log line announces (docs/facts.md "vLLM: cold start, logs, metrics"; 0.25 and 0.32).

Phases, in order: process (launched) -> weights -> compile -> kv_cache -> cuda_graphs -> api_server ->
ready (the last is set by `up` from /health and /v1/models, never from a line).
"""

from __future__ import annotations

import re

ORDER = ("process", "weights", "compile", "kv_cache", "cuda_graphs", "api_server", "ready")

LABELS = {
    "process": "starting vLLM",
    "weights": "loading weights",
    "compile": "compiling (torch.compile)",
    "kv_cache": "sizing the KV cache",
    "cuda_graphs": "capturing CUDA graphs",
    "api_server": "starting the API server",
    "ready": "ready",
}

# (phase, pattern): the first match wins. Sources under vllm/ (0.32.0):
_PATTERNS = [
    # v1/worker/gpu_model_runner.py, cpu_model_runner.py; model_loader/default_loader.py
    ("weights", re.compile(r"Starting to load model|Loading weights took|Loading safetensors checkpoint")),
    # compilation/backends.py, monitor.py, decorators.py; CPU: cpu_model_runner.py "Warming up model"
    (
        "compile",
        re.compile(
            r"Dynamo bytecode transform|torch\.compile take|torch\.compile took|Compiling a graph"
            r"|Directly load (?:the compiled graph|AOT compilation)|Warming up model for the compilation"
            r"|Model loading took"
        ),
    ),
    # v1/worker/gpu_worker.py, cpu_worker.py, v1/core/kv_cache_utils.py
    (
        "kv_cache",
        re.compile(r"Available KV cache memory|KV cache size: |set \([\d.]+/[\d.]+\) GiB for KV cache"),
    ),
    # v1/worker/gpu_model_runner.py (tqdm bar and summary)
    ("cuda_graphs", re.compile(r"Capturing CUDA graphs|Profiling CUDA graph memory|Graph capturing finished")),
    # v1/engine/core.py; entrypoints/launchers/api_server/entry.py; uvicorn
    (
        "api_server",
        re.compile(r"init engine \(profile|Starting vLLM (?:API )?server|Application startup complete"),
    ),
]


def phase_of(line: str) -> str | None:
    for phase, pattern in _PATTERNS:
        if pattern.search(line):
            return phase
    return None


def advance(current: str, line: str) -> str:
    """The phase after reading line: never moves backwards (graph capture logs after the KV sizing)."""
    found = phase_of(line)
    if found is None or ORDER.index(found) <= ORDER.index(current):
        return current
    return found
