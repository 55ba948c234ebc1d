"""KV bytes one token occupies in one attention layer, per KV-cache dtype, as vLLM 0.32.0 sizes it.

Sources (vLLM 0.32.0, installed CPU build, same Python source as the GPU wheels):
- dtype names: vllm/config/cache.py ``CacheDType``; element sizes: vllm/utils/torch_utils.py
  ``STR_DTYPE_TO_TORCH_DTYPE`` ("auto" = the model dtype, kv_cache_dtype_str_to_dtype).
- dense page: vllm/v1/kv_cache_interface.py ``AttentionSpec``: heads x (head_size + head_size_v) x elem.
- per-token-head int8/fp8/int4: vllm/v1/attention/backends/triton_attn.py ``customize_spec``
  (data + two fp32 scales per head; int4 packs two values a byte).
- nvfp4: vllm/v1/attention/backends/flashinfer.py ``customize_spec`` (2 x heads slots of
  head_size/2 + head_size/16 bytes; vllm/utils/torch_utils.py nvfp4_kv_cache_full_dim).
- TurboQuant: vllm/model_executor/layers/quantization/turboquant/config.py ``slot_size_aligned``,
  installed as the page content by vllm/v1/attention/backends/turboquant_attn.py ``customize_spec``.
- UltraQuant (ROCm): vllm/v1/attention/ops/ultraquant/format.py ``slot_size`` (group size 32).
- MLA: vllm/model_executor/layers/attention/mla_attention.py ``get_kv_cache_spec``: one head of
  kv_lora_rank + qk_rope_head_dim, no separate V, replicated on every TP rank (max_tp_shards=1);
  fp8_ds_mla 656 B and nvfp4_ds_mla 352 B per token.
- TP: vllm/config/model.py ``get_num_kv_heads``: max(1, kv_heads // tp) (replicated when tp > kv_heads).
"""

from __future__ import annotations

import math

from tqdeploy.model.facts import ModelFacts
from tqdeploy.model.tqdata import presets

# vllm/config/cache.py CacheDType (vLLM 0.32.0), in its order.
CACHE_DTYPES = (
    "auto",
    "float16",
    "bfloat16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_inc",
    "fp8_ds_mla",
    "nvfp4_ds_mla",
    "turboquant_k8v4",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_3bit_nc",
    "ultraquant_4bit",
    "int4_per_token_head",
    "int8_per_token_head",
    "fp8_per_token_head",
    "nvfp4",
    "nvfp4_4over6",
)
TURBOQUANT_DTYPES = ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc")
_FP8 = ("fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc")
_MLA_ONLY = {"fp8_ds_mla": 656, "nvfp4_ds_mla": 352}


class NotApplicable(ValueError):
    """This KV dtype cannot be used with this model in vLLM (reason in the message)."""


def uses_packed_skip(kv_cache_dtype: str) -> bool:
    """Dtypes whose dense models keep the boundary layers at model dtype (arg_utils.create_engine_config)."""
    return kv_cache_dtype.startswith("turboquant_") or kv_cache_dtype == "ultraquant_4bit"


def turboquant_slot_bytes(kv_cache_dtype: str, head_dim: int) -> int:
    """Packed K+V bytes per head per token, rounded up to even (TurboQuantConfig.slot_size_aligned)."""
    p = presets()[kv_cache_dtype]
    if p["key_bits"] == 8:
        key = head_dim  # FP8 keys: one byte per element, no norm
    else:
        key = math.ceil(head_dim * p["key_bits"] / 8) + 2  # Lloyd-Max indices + fp16 norm
    value = math.ceil(head_dim * p["value_bits"] / 8) + 4  # uniform codes + fp16 scale and zero
    slot = int(key + value)  # the preset's bits come from checks/turboquant.json
    return slot + slot % 2


def kv_heads_per_rank(facts: ModelFacts, tp: int) -> int:
    if facts.mla:
        return 1
    return max(1, facts.num_key_value_heads // tp)


def layer_token_bytes(facts: ModelFacts, kv_cache_dtype: str, tp: int = 1) -> int:
    """Bytes of one token in one attention layer on one TP rank (the page of a 1-token block)."""
    if kv_cache_dtype not in CACHE_DTYPES:
        raise NotApplicable(f"{kv_cache_dtype!r} is not a --kv-cache-dtype of vLLM 0.32.0")
    heads = kv_heads_per_rank(facts, tp)
    hs = facts.kv_head_size
    hv = 0 if facts.mla else hs
    if kv_cache_dtype in _MLA_ONLY:
        if not facts.mla:
            raise NotApplicable(f"{kv_cache_dtype} is a DeepSeek sparse-MLA layout; this model has no MLA")
        return _MLA_ONLY[kv_cache_dtype]
    if kv_cache_dtype == "auto":
        return heads * (hs + hv) * facts.dtype_bytes
    if kv_cache_dtype in ("float16", "bfloat16"):
        return heads * (hs + hv) * 2
    if kv_cache_dtype in _FP8:
        return heads * (hs + hv)
    if facts.mla:
        raise NotApplicable(f"{kv_cache_dtype} has no MLA attention backend in vLLM 0.32.0")
    return _packed_token_bytes(kv_cache_dtype, heads, hs, hv)


def _packed_token_bytes(kv_cache_dtype: str, heads: int, hs: int, hv: int) -> int:
    """The per-token-head, NVFP4, TurboQuant and UltraQuant layouts (attention without MLA)."""
    if kv_cache_dtype in ("int8_per_token_head", "fp8_per_token_head"):
        return heads * ((hs + hv) + 2 * 4)
    if kv_cache_dtype == "int4_per_token_head":
        return heads * ((hs // 2 + hv // 2) + 2 * 4)
    if kv_cache_dtype.startswith("nvfp4"):
        return 2 * heads * (hs // 2 + hs // 16)
    if kv_cache_dtype in TURBOQUANT_DTYPES:
        return heads * turboquant_slot_bytes(kv_cache_dtype, hs)
    if kv_cache_dtype == "ultraquant_4bit":
        if hs % 32:
            raise NotApplicable(f"ultraquant_4bit needs head_dim divisible by 32 (head_dim {hs})")
        return heads * (hs // 2 + hs // 32) * 2
    raise NotApplicable(f"no size rule for {kv_cache_dtype}")  # pragma: no cover - CACHE_DTYPES is exhaustive


def boundary_skip_layers(facts: ModelFacts, n: int = 2) -> list[int]:
    """TurboQuantConfig.get_boundary_skip_layers: first/last n of num_hidden_layers; none on hybrids."""
    if facts.is_hybrid:
        return []
    layers = facts.num_hidden_layers
    n = min(n, layers // 2)
    if n <= 0:
        return []
    return sorted(set(range(n)) | set(range(layers - n, layers)))


def effective_skip_layers(facts: ModelFacts, kv_cache_dtype: str, skip_layers: tuple[int, ...] = ()) -> list[int]:
    """Layers kept at model dtype: the boundary rule (packed dtypes) plus the operator's extra skips."""
    skips = set(int(i) for i in skip_layers)
    if uses_packed_skip(kv_cache_dtype):
        skips |= set(boundary_skip_layers(facts))
    return sorted(skips)


def per_layer_token_bytes(
    facts: ModelFacts, kv_cache_dtype: str, tp: int = 1, skip_layers: tuple[int, ...] = ()
) -> dict[int, int]:
    """{attention layer index: bytes per token on one rank}; skipped layers at model dtype.

    Skips only matter for quantized dtypes: vLLM sets a skipped layer to "auto"
    (vllm/model_executor/layers/attention/attention.py, kv_cache_dtype_skip_layers).
    """
    primary = layer_token_bytes(facts, kv_cache_dtype, tp)
    skipped = layer_token_bytes(facts, "auto", tp)
    skips = set(effective_skip_layers(facts, kv_cache_dtype, skip_layers))
    quantized = kv_cache_dtype not in ("auto",)
    return {i: (skipped if quantized and i in skips else primary) for i in facts.kv_layers}
