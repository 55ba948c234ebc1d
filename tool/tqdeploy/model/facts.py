"""ModelFacts: what a checkpoint's config.json says about its shape, read the way vLLM reads it.

Where vLLM derives a value, the derivation here follows its source (vLLM 0.32.0):
- head size: explicit ``head_dim`` (> 0) else ``hidden_size // num_attention_heads``
  (vllm/transformers_utils/model_arch_config_convertor.py, get_head_size); MLA models cache
  ``kv_lora_rank + qk_rope_head_dim`` in one "head" (same function, and
  vllm/model_executor/layers/attention/mla_attention.py get_kv_cache_spec: num_kv_heads=1).
- full-attention layers of hybrids: ``layer_types`` (full_attention|attention), ``layers_block_type``
  (attention|hybrid), ``attn_type_list`` (== 1)
  (vllm/model_executor/layers/quantization/turboquant/config.py, _get_full_attention_layer_indices).
- linear-attention (Gated DeltaNet) state: conv (kernel-1, 2*k_heads*k_dim + v_heads*v_dim) and
  temporal (v_heads, v_dim, k_dim) (vllm/model_executor/layers/mamba/mamba_utils.py,
  gated_delta_net_state_shape); temporal dtype from ``mamba_ssm_dtype`` when the config sets it
  (vllm/model_executor/models/config.py, Qwen3_5ForConditionalGenerationConfig), else the model dtype.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdeploy.findings import Finding

# Layer-type names that mean "this layer keeps no per-token KV" in the conventions vLLM reads.
_LINEAR_TYPES = ("linear_attention", "mamba", "mamba2", "conv", "gated_deltanet")
_FULL_TYPES = ("full_attention", "attention")
_SLIDING_TYPES = ("sliding_attention", "sliding_window", "local_attention")


@dataclass
class ModelFacts:
    source: str
    architecture: str | None = None
    model_type: str | None = None
    num_hidden_layers: int = 0
    num_attention_heads: int = 0
    num_key_value_heads: int = 0
    head_dim: int = 0
    hidden_size: int = 0
    intermediate_size: int | None = None
    vocab_size: int | None = None
    tie_word_embeddings: bool = False
    max_position_embeddings: int | None = None  # the context length vLLM derives (key in max_len_key)
    max_len_key: str | None = None  # which config key it came from (usually max_position_embeddings)
    rope_scaling: dict[str, Any] | None = None
    dtype: str | None = None  # torch_dtype string as written, e.g. "bfloat16" (see serving_dtype)
    full_attention_layers: list[int] = field(default_factory=list)
    is_hybrid: bool = False
    linear_attention: dict[str, Any] | None = None
    sliding_window: dict[str, Any] | None = None  # {"size": int, "layers": [int]}
    mla: dict[str, Any] | None = None  # {"kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"}
    moe: dict[str, Any] | None = None
    quantization: dict[str, Any] | None = None
    weight_bytes: int | None = None  # exact, from safetensors headers / index metadata
    weight_bytes_by_dtype: dict[str, int] = field(default_factory=dict)
    weight_source: str | None = None  # "safetensors headers" | "index metadata" | "hub metadata"
    turbo_quant_config: dict[str, Any] | None = None  # parsed hint (see tqdeploy.model.tqhint)
    turbo_quant_config_raw: Any = None
    turbo_quant_config_problems: list[Finding] = field(default_factory=list)
    mtp_layers: int = 0
    attn_logit_softcapping: float | None = None  # Gemma 2 style tanh cap on attention scores
    config_path: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def kv_layers(self) -> list[int]:
        """Layers that hold per-token KV: full attention plus sliding-window layers."""
        sw = self.sliding_window["layers"] if self.sliding_window else []
        return sorted(set(self.full_attention_layers) | set(sw))

    @property
    def kv_head_size(self) -> int:
        """Bytes-relevant head size of the KV cache (MLA caches the latent plus the rope part)."""
        if self.mla:
            return int(self.mla["kv_lora_rank"]) + int(self.mla["qk_rope_head_dim"])
        return self.head_dim

    @property
    def serving_dtype(self) -> str:
        """The dtype vLLM runs the model in under --dtype auto (its default): the config's dtype, except
        that float32 checkpoints are downcast to the platform's preferred dtype, bfloat16 (float16 on GPUs
        without bf16; both 2 bytes) (vllm/config/model.py _resolve_auto_dtype, "Downcast for float32 models")."""
        d = str(self.dtype or "bfloat16").lower()
        return "bfloat16" if d in ("float32", "float", "fp32", "f32") else d

    @property
    def dtype_bytes(self) -> int:
        """Element size of weights and of the "auto" KV cache as vLLM serves the model by default."""
        return dtype_size(self.serving_dtype)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["kv_layers"] = self.kv_layers
        return data


_DTYPE_SIZES = {
    "float32": 4,
    "float": 4,
    "fp32": 4,
    "f32": 4,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "half": 2,
    "fp16": 2,
    "f16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "f8_e4m3": 1,
    "f8_e5m2": 1,
    "fp8": 1,
    "uint8": 1,
    "int8": 1,
}


def dtype_size(name: str) -> int:
    key = str(name).lower().replace("torch.", "")
    if key not in _DTYPE_SIZES:
        raise ValueError(f"unknown dtype {name!r}")
    return _DTYPE_SIZES[key]


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language-model part: nested ``text_config`` of multimodal wrappers, else the config itself.

    Keys the wrapper sets and the text config lacks (e.g. torch_dtype) are inherited.
    """
    inner = config.get("text_config")
    if not isinstance(inner, dict):
        inner = config.get("llm_config") if isinstance(config.get("llm_config"), dict) else None
    if inner is None:
        return config
    merged = dict(inner)
    for key in ("torch_dtype", "dtype", "tie_word_embeddings", "quantization_config"):
        if key not in merged and key in config:
            merged[key] = config[key]
    return merged


def _int(cfg: dict[str, Any], *keys: str, default: int | None = None) -> int | None:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and value > 0:
            return value
    return default


def layer_kinds(cfg: dict[str, Any], num_layers: int) -> tuple[list[str] | None, str | None]:
    """Per-layer kind ("full" | "linear" | "sliding") and which config key said so."""
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        kinds = []
        for t in layer_types:
            t = str(t)
            kinds.append(
                "full"
                if t in _FULL_TYPES
                else "sliding"
                if t in _SLIDING_TYPES
                else "linear"
                if t in _LINEAR_TYPES
                else "other:" + t
            )
        return kinds, "layer_types"
    block_types = cfg.get("layers_block_type")
    if isinstance(block_types, list) and block_types:
        return ["full" if t in ("attention", "hybrid") else "linear" for t in block_types], "layers_block_type"
    attn_types = cfg.get("attn_type_list")
    if isinstance(attn_types, list) and attn_types:
        return ["full" if t == 1 else "linear" for t in attn_types], "attn_type_list"
    interval = _int(cfg, "full_attention_interval")
    if interval and num_layers:
        # transformers' Qwen3Next/Qwen3.5 configs expand full_attention_interval into layer_types this way.
        return ["full" if (i + 1) % interval == 0 else "linear" for i in range(num_layers)], "full_attention_interval"
    return None, None


def _sliding_kinds(cfg: dict[str, Any], num_layers: int) -> list[str] | None:
    """Sliding-window layout for configs written before ``layer_types`` existed."""
    window = cfg.get("sliding_window")
    if not isinstance(window, int) or window <= 0 or cfg.get("use_sliding_window") is False:
        return None
    mt = str(cfg.get("model_type", ""))
    pattern = cfg.get("sliding_window_pattern")
    if mt == "gemma2":
        pattern = 2  # transformers Gemma2Config: every 2nd layer is global
    if isinstance(pattern, int) and pattern > 1:
        return ["full" if (i + 1) % pattern == 0 else "sliding" for i in range(num_layers)]
    return ["sliding"] * num_layers  # Mistral-style: one window on every layer


def _quantization(cfg: dict[str, Any]) -> dict[str, Any] | None:
    q = cfg.get("quantization_config")
    if not isinstance(q, dict):
        return None
    method = str(q.get("quant_method", "unknown"))
    out: dict[str, Any] = {"method": method}
    for key in ("bits", "group_size", "weight_block_size", "activation_scheme", "fmt", "version", "zero_point"):
        if key in q:
            out[key] = q[key]
    groups = q.get("config_groups")
    if isinstance(groups, dict):  # compressed-tensors
        schemes = []
        for name, g in groups.items():
            w = g.get("weights") if isinstance(g, dict) else None
            w = w if isinstance(w, dict) else {}
            schemes.append(
                {
                    "group": name,
                    "bits": w.get("num_bits"),
                    "type": w.get("type"),
                    "strategy": w.get("strategy"),
                    "group_size": w.get("group_size"),
                }
            )
        out["schemes"] = schemes
        bits = {s["bits"] for s in schemes if s.get("bits")}
        if len(bits) == 1:
            out.setdefault("bits", bits.pop())
        if q.get("kv_cache_scheme"):
            out["kv_cache_scheme"] = q["kv_cache_scheme"]
    if method == "fp8":
        out.setdefault("bits", 8)
    return out


def _moe(cfg: dict[str, Any]) -> dict[str, Any] | None:
    experts = _int(cfg, "num_experts", "num_local_experts", "n_routed_experts")
    if not experts:
        return None
    return {
        "num_experts": experts,
        "experts_per_token": _int(cfg, "num_experts_per_tok", "num_experts_per_token", "moe_topk"),
        "moe_intermediate_size": _int(cfg, "moe_intermediate_size", "expert_intermediate_size"),
        "shared_experts": _int(cfg, "n_shared_experts", "num_shared_experts", default=0),
        "shared_expert_intermediate_size": _int(cfg, "shared_expert_intermediate_size"),
        "first_k_dense_replace": _int(cfg, "first_k_dense_replace", default=0),
    }
