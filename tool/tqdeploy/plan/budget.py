"""The per-GPU memory budget: what is left for the KV cache after weights and the non-KV reserve.

vLLM (v1/worker/gpu_worker.py, 0.32.0): requested = total memory x gpu_memory_utilization;
KV = requested - non-KV memory measured in a profile run (weights, activation peak, non-torch memory
such as the CUDA context and NCCL buffers) - the CUDA-graph estimate (subtracted by default since
v0.21.0, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1). tqdeploy cannot run that profile before the
server exists, so the reserve here is an estimate (docs/plan.md shows it against real logs); the KV
tokens for a given KV memory are exact. Pass kv_cache_memory_bytes (vLLM's --kv-cache-memory-bytes)
to plan against a known KV size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tqdeploy.model.facts import ModelFacts
from tqdeploy.model.weights import estimate_weight_bytes
from tqdeploy.units import GiB

CONTEXT_RESERVE = GiB // 2  # CUDA context + allocator slack outside torch's pool (assumption)
CUDA_GRAPH_RESERVE = GiB // 2  # measured 0.20-0.26 GiB for a small model on an H200 (0.25.0 logs)
NCCL_RESERVE = GiB  # per rank when tp > 1: NCCL and custom all-reduce buffers (assumption)
SAMPLER_COPIES = (
    7  # fp32 logits copies in the sampler warm-up: the smallest count that covers the Qwen3.6-shaped H200 log
)


def scheduler_defaults(gpu_memory_bytes: int, gpu_name: str = "", platform: str = "cuda") -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) that `vllm serve` picks (engine/arg_utils.py,
    _get_default_max_num_seqs_and_batched_tokens, OPENAI_API_SERVER)."""
    if platform == "cpu":
        return 2048, 128
    if gpu_memory_bytes >= 160 * GiB:
        return 16384, 1024
    if gpu_memory_bytes >= 70 * GiB and "a100" not in gpu_name.lower():
        return 8192, 1024
    return 2048, 256


@dataclass
class Budget:
    gpu_memory_bytes: int
    gpu_memory_utilization: float
    requested_bytes: int
    weights_bytes: int  # per GPU
    weights_source: str
    activation_bytes: int
    cuda_graph_bytes: int
    nccl_bytes: int
    context_bytes: int
    kv_bytes: int  # per GPU
    kv_source: str  # "budget" | "operator"
    max_num_batched_tokens: int
    max_num_seqs: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def estimate_activation_bytes(facts: ModelFacts, tp: int, max_num_batched_tokens: int, max_num_seqs: int) -> int:
    per_token = 2 * (facts.intermediate_size or 4 * facts.hidden_size) // tp + 4 * facts.hidden_size
    forward = max_num_batched_tokens * per_token * facts.dtype_bytes * 2
    sampler = max_num_seqs * (facts.vocab_size or 0) * 4 * SAMPLER_COPIES // tp
    return forward + sampler


def make_budget(
    facts: ModelFacts,
    *,
    gpu_memory_bytes: int,
    tp: int,
    gpu_memory_utilization: float,
    gpu_name: str = "",
    enforce_eager: bool = False,
    platform: str = "cuda",
    kv_cache_memory_bytes: int | None = None,
    reserve_bytes: int | None = None,
) -> Budget:
    batched, seqs = scheduler_defaults(gpu_memory_bytes, gpu_name, platform)
    requested = int(gpu_memory_bytes * gpu_memory_utilization)
    if facts.weight_bytes:
        weights, source = -(-facts.weight_bytes // tp), facts.weight_source or "safetensors"
    else:
        weights, source = -(-estimate_weight_bytes(facts) // tp), "estimated from config.json"
    graphs = 0 if enforce_eager or platform == "cpu" else CUDA_GRAPH_RESERVE
    nccl = NCCL_RESERVE if tp > 1 else 0
    context = CONTEXT_RESERVE if platform != "cpu" else 0
    activation = estimate_activation_bytes(facts, tp, batched, seqs)
    if reserve_bytes is not None:  # the operator's own figure replaces every estimate
        activation, graphs, nccl, context = reserve_bytes, 0, 0, 0
    kv = requested - weights - activation - graphs - nccl - context
    kv_source = "budget"
    if kv_cache_memory_bytes is not None:
        kv, kv_source = kv_cache_memory_bytes, "operator"
    return Budget(
        gpu_memory_bytes,
        gpu_memory_utilization,
        requested,
        weights,
        source,
        activation,
        graphs,
        nccl,
        context,
        kv,
        kv_source,
        batched,
        seqs,
    )
