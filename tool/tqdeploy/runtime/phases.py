"""The start-up phase a vLLM log line announces (docs/facts.md "vLLM: cold start, logs, metrics"; 0.25 and 0.32).

Phases, in order: process (launched) -> weights -> compile -> kv_cache -> cuda_graphs -> api_server ->
ready (the last is set by `up` from /health and /v1/models, never from a line). The lines that announce each
phase, with the vLLM source that prints them, are in tqdeploy.vllmfacts.logpatterns (PHASE_PATTERNS).
"""

from __future__ import annotations

from tqdeploy.vllmfacts.logpatterns import PHASE_PATTERNS

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


def phase_of(line: str) -> str | None:
    for phase, pattern in PHASE_PATTERNS:  # the first match wins
        if pattern.search(line):
            return phase
    return None


def advance(current: str, line: str) -> str:
    """The phase after reading line: never moves backwards (graph capture logs after the KV sizing)."""
    found = phase_of(line)
    if found is None or ORDER.index(found) <= ORDER.index(current):
        return current
    return found
