"""KV memory -> KV tokens the way vLLM 0.32.0's v1 allocator does it (block and page rounding included).

vLLM's reported "KV cache size: N tokens" is int(max_concurrency * max_model_len) where
max_concurrency = num_blocks / (blocks one request at max_model_len needs, summed over cache groups)
and num_blocks = KV memory // bytes of one block across a group's layers
(vllm/v1/core/kv_cache_utils.py: get_kv_cache_config_from_groups, get_max_concurrency_for_kv_cache_config,
get_kv_cache_capacity). Block sizes: platform default 16 on CUDA (CacheConfig.DEFAULT_BLOCK_SIZE), 128 on
CPU (vllm/platforms/cpu.py); hybrids raise it until an attention page covers a mamba page and pad the
mamba page to match (vllm/platforms/interface.py _align_hybrid_block_size); quantized primaries with
higher-precision skip layers raise it again (_align_heterogeneous_kv_block_size). Layers are grouped per
type in groups of equal size (kv_cache_utils._get_kv_cache_groups_uniform_page_size).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from tqdeploy.model.facts import ModelFacts, dtype_size
from tqdeploy.plan.kvformula import layer_token_bytes, per_layer_token_bytes


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass
class KvCapacity:
    block_size: int
    bytes_per_block: int
    num_blocks: int
    blocks_per_request: int
    max_concurrency: float
    tokens: int
    group_sizes: list[int] = field(default_factory=list)  # layers per cache group, attention first
    mamba_page_bytes: int | None = None  # one linear-attention layer's state per sequence (unpadded)
    mamba_page_padded: int | None = None
    mamba_cache_mode: str | None = None
    fixed_state_bytes_per_seq: int = 0  # linear-attention state blocks one sequence holds (all groups)
    exact: bool = True
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def mamba_state_bytes(facts: ModelFacts, tp: int) -> int | None:
    """Gated DeltaNet state per layer per sequence on one rank (mamba_utils.gated_delta_net_state_shape)."""
    la = facts.linear_attention or {}
    needed = ("num_key_heads", "num_value_heads", "key_head_dim", "value_head_dim", "conv_kernel")
    if la.get("kind") != "gated_delta_net" or not all(la.get(k) for k in needed):
        return None
    conv_dim = la["key_head_dim"] * la["num_key_heads"] * 2 + la["value_head_dim"] * la["num_value_heads"]
    conv = (conv_dim // tp) * (la["conv_kernel"] - 1) * dtype_size(la.get("conv_dtype") or facts.dtype or "bfloat16")
    ssm = (la["num_value_heads"] // tp) * la["value_head_dim"] * la["key_head_dim"] * dtype_size(la["state_dtype"])
    return int(conv + ssm)  # config.json's numbers (check_numbers made them ints)


def default_block_size(platform: str, facts: ModelFacts, kv_cache_dtype: str) -> int:
    if platform == "cpu":
        return 16 if facts.mla else 128
    if kv_cache_dtype == "ultraquant_4bit":
        return 64  # UltraQuantAttentionBackend.get_preferred_block_size
    return 16


def _group_layout(bucket_sizes: list[int]) -> list[list[int]]:
    """Layers per group, per same-type bucket, after vLLM splits each bucket into equal groups."""
    group_size = min(bucket_sizes)
    if max(bucket_sizes) < group_size * 1.5:
        group_size = max(bucket_sizes)
    out: list[list[int]] = []
    for n in bucket_sizes:
        groups = cdiv(n, group_size)
        out.append([len(range(i, n, groups)) for i in range(groups)])  # layers[i::groups]
    return out


Buckets = list[tuple[str, list[int]]]  # (kind: full / sliding / linear, its KV layers), kinds present only


@dataclass
class _HybridPages:
    """Block size after hybrid alignment, and the linear-attention page (None without linear layers)."""

    block_size: int
    mamba_page: int | None = None
    mamba_padded: int | None = None
    mode: str | None = None


def _align_block_size(
    facts: ModelFacts,
    kv_cache_dtype: str,
    tp: int,
    bs: int,
    kernel_min: int,
    pages: tuple[int, int, bool],
    prefix_caching: bool,
    notes: list[str],
) -> tuple[_HybridPages, bool]:
    """vLLM's block-size raises for hybrids and skip layers; returns the pages and whether they are exact."""
    primary, skipped, has_skip = pages
    n_linear = len(facts.linear_attention["layers"]) if facts.is_hybrid and facts.linear_attention else 0
    if n_linear:
        mamba_page = mamba_state_bytes(facts, tp)
        if mamba_page is None:
            raise ValueError("linear-attention state size unknown for this architecture")
        attn_1 = math.lcm(primary, skipped) if has_skip and kv_cache_dtype.startswith("turboquant_") else primary
        align = max(kernel_min, bs) if not facts.mla else max(kernel_min, bs, 128)
        attn_bs = align * cdiv(mamba_page, align * attn_1)
        attn_bs = kernel_min * cdiv(attn_bs, kernel_min)
        bs = max(bs, attn_bs)
        hybrid = _HybridPages(bs, mamba_page, bs * attn_1, "align" if prefix_caching else "none")
        if has_skip:
            notes.append("hybrid model with skip layers: vLLM pads mixed pages in ways not modelled here")
        return hybrid, not has_skip
    if has_skip and skipped != primary:
        align = max(kernel_min, bs)
        bs = max(bs, align * cdiv(skipped * kernel_min, align * primary))
    return _HybridPages(bs), True


def _cache_groups(buckets: Buckets, mixed_pages: bool, notes: list[str]) -> tuple[list[list[list[int]]], bool]:
    """Layers per cache group, per bucket; False when mixed page sizes make the packing inexact."""
    if len(buckets) == 1:
        return [[buckets[0][1]]], True  # one type: one group, every layer's page in each block
    exact = True
    if mixed_pages:
        exact = False
        notes.append(
            "sliding-window model with skip layers: mixed page sizes are packed by vLLM in ways not modelled exactly"
        )
    layout = _group_layout([len(b) for _, b in buckets])
    groups = [
        [layers[i::n] for i in range(n)] for (_, layers), n in zip(buckets, (len(g) for g in layout), strict=False)
    ]
    return groups, exact


def _layer_buckets(facts: ModelFacts, kv_layers: list[int], hybrid: _HybridPages) -> tuple[Buckets, int | None]:
    """The KV layers by kind (full, sliding, linear), only the kinds present, and the sliding window (None
    without sliding layers); linear layers count only where a mamba page holds their state."""
    window_spec = facts.sliding_window or {}
    sliding: list[int] = window_spec["layers"] if window_spec else []
    window = window_spec.get("size")
    if sliding and window is None:
        raise ValueError("sliding-window layers without a window size in config.json")
    full = [i for i in kv_layers if i not in set(sliding)]
    linear = list(facts.linear_attention["layers"]) if hybrid.mamba_page is not None and facts.linear_attention else []
    kinds = (("full", full), ("sliding", sliding), ("linear", linear))
    return [(kind, layers) for kind, layers in kinds if layers], window if sliding else None


def _bytes_per_block(
    buckets: Buckets, groups: list[list[list[int]]], attention_pages: dict[int, int], hybrid: _HybridPages
) -> int:
    """One block spans the pages of a group's layers; the pool's block is the largest group's.
    attention_pages: layer -> its page bytes (block size x bytes per token); linear layers hold a mamba page."""

    def page(layer: int, kind: str) -> int:
        if kind == "linear":
            assert hybrid.mamba_padded is not None  # linear layers only exist with a mamba page
            return hybrid.mamba_padded
        return attention_pages[layer]

    return max(sum(page(layer, kind) for layer in g) for (kind, _), gs in zip(buckets, groups, strict=True) for g in gs)


def _group_blocks(
    kind: str, bs: int, window: int | None, mamba_mode: str | None, max_model_len: int, max_in_flight_tokens: int
) -> int:
    """Blocks one request holds in one cache group of this kind."""
    if kind == "sliding":
        assert window is not None  # _layer_buckets: sliding layers come with a size
        return cdiv(min(window - 1 + max_in_flight_tokens, max_model_len), bs) + 1
    if kind == "linear":
        return 2 if mamba_mode == "align" else 1  # MambaSpec.max_memory_usage_bytes
    return cdiv(max_model_len, bs)


def kv_capacity(
    facts: ModelFacts,
    kv_cache_dtype: str,
    kv_memory_bytes: int,
    max_model_len: int,
    *,
    tp: int = 1,
    skip_layers: tuple[int, ...] = (),
    platform: str = "cuda",
    block_size: int | None = None,
    prefix_caching: bool = True,
    max_in_flight_tokens: int = 8192,
) -> KvCapacity:
    """Blocks, concurrency and tokens vLLM reports for this KV memory on one rank."""
    per_layer = per_layer_token_bytes(facts, kv_cache_dtype, tp, skip_layers)
    if not per_layer:
        raise ValueError("model has no attention layers that hold KV")
    primary = layer_token_bytes(facts, kv_cache_dtype, tp)
    skipped = layer_token_bytes(facts, "auto", tp)
    has_skip = any(v != primary for v in per_layer.values())
    notes: list[str] = []
    kernel_min = 32 if platform == "cpu" else 16  # CPU_ATTN MultipleOf(32); FA/TQ/Triton smallest 16
    wanted = block_size or default_block_size(platform, facts, kv_cache_dtype)
    pages = (primary, skipped, has_skip)
    hybrid, exact = _align_block_size(facts, kv_cache_dtype, tp, wanted, kernel_min, pages, prefix_caching, notes)
    bs = hybrid.block_size
    buckets, window = _layer_buckets(facts, list(per_layer), hybrid)
    groups, groups_exact = _cache_groups(buckets, has_skip and hybrid.mamba_page is None, notes)
    exact = exact and groups_exact

    bytes_per_block = _bytes_per_block(buckets, groups, {i: bs * b for i, b in per_layer.items()}, hybrid)
    if window is not None:
        notes.append(
            f"sliding-window groups sized for {max_in_flight_tokens} in-flight tokens "
            "(vLLM's max_num_batched_tokens default for this GPU class; hybrid KV manager on)"
        )

    num_blocks = max(kv_memory_bytes, 0) // bytes_per_block
    # blocks one request holds, per kind (each kind is one bucket): its groups x the blocks of one group
    held = {
        kind: len(gs) * _group_blocks(kind, bs, window, hybrid.mode, max_model_len, max_in_flight_tokens)
        for (kind, _), gs in zip(buckets, groups, strict=True)
    }
    per_request, mamba_blocks = sum(held.values()), held.get("linear", 0)
    concurrency = num_blocks / per_request
    return KvCapacity(
        block_size=bs,
        bytes_per_block=bytes_per_block,
        num_blocks=num_blocks,
        blocks_per_request=per_request,
        max_concurrency=concurrency,
        tokens=int(concurrency * max_model_len),
        group_sizes=[len(g) for gs in groups for g in gs],
        mamba_page_bytes=hybrid.mamba_page,
        mamba_page_padded=hybrid.mamba_padded,
        mamba_cache_mode=hybrid.mode,
        fixed_state_bytes_per_seq=mamba_blocks * bytes_per_block,
        exact=exact,
        notes=notes,
    )
