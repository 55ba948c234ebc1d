"""Turn a parsed config.json into ModelFacts (pure: no files, no network)."""

from __future__ import annotations

from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.model.facts import (
    ModelFacts,
    _int,
    _moe,
    _quantization,
    _sliding_kinds,
    dtype_size,
    layer_kinds,
    text_config,
)


def build_facts(config: Any, source: str, config_path: str = "config.json") -> ModelFacts:
    """Read the architecture facts from a config.json dict; TQError naming the file when unusable."""
    if not isinstance(config, dict):
        raise TQError(f"{config_path} is not a JSON object", "point --model at a Hugging Face checkpoint folder")
    cfg = text_config(config)
    check_numbers(cfg, config_path)
    archs = config.get("architectures") or cfg.get("architectures") or []
    archs = archs if isinstance(archs, list) else []
    layers, heads, hidden = _decoder_shape(cfg, config_path)
    facts = ModelFacts(source=source, config_path=config_path)
    facts.architecture = str(archs[0]) if archs else None
    facts.model_type = str(cfg.get("model_type") or config.get("model_type") or "") or None
    facts.num_hidden_layers = layers
    facts.num_attention_heads = heads
    facts.hidden_size = hidden
    # model_arch_config_convertor.get_total_num_kv_heads (vLLM 0.32.0): first of these, else the attention heads
    facts.num_key_value_heads = (
        _int(
            cfg,
            "n_head_kv",
            "num_kv_heads",
            "num_key_value_heads",
            "multi_query_group_num",
            "num_attention_groups",
        )
        or heads
    )
    facts.head_dim = _int(cfg, "head_dim", "hidden_size_per_head") or hidden // heads
    facts.intermediate_size = _int(cfg, "intermediate_size", "ffn_hidden_size")
    facts.vocab_size = _int(cfg, "vocab_size")
    facts.tie_word_embeddings = bool(cfg.get("tie_word_embeddings", config.get("tie_word_embeddings", False)))
    facts.max_position_embeddings, facts.max_len_key = _derived_max_len(cfg)
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    facts.rope_scaling = rope if isinstance(rope, dict) else None
    dtype = cfg.get("torch_dtype") or cfg.get("dtype") or config.get("torch_dtype") or config.get("dtype")
    facts.dtype = _checked_dtype(dtype, config_path) if dtype else None
    facts.quantization = _quantization(cfg) or _quantization(config)
    facts.moe = _moe(cfg)
    facts.mtp_layers = _int(cfg, "mtp_num_hidden_layers", "num_nextn_predict_layers") or 0
    cap = cfg.get("attn_logit_softcapping")  # read by vLLM's gemma2/gemma4 models as logits_soft_cap
    if isinstance(cap, (int, float)) and not isinstance(cap, bool) and cap > 0:
        facts.attn_logit_softcapping = float(cap)
    facts.mla = _mla(cfg)
    _read_layer_kinds(facts, cfg, config_path)
    return facts


def _decoder_shape(cfg: dict[str, Any], config_path: str) -> tuple[int, int, int]:
    """(layers, attention heads, hidden size): what every decoder config has; TQError naming what it lacks."""
    layers = _int(cfg, "num_hidden_layers", "n_layer", "num_layers") or 0
    heads = _int(cfg, "num_attention_heads", "n_head") or 0
    hidden = _int(cfg, "hidden_size", "d_model", "n_embd") or 0
    missing = [
        k for k, v in (("num_hidden_layers", layers), ("num_attention_heads", heads), ("hidden_size", hidden)) if not v
    ]
    if missing:
        raise TQError(
            f"{config_path} lacks {', '.join(missing)}: not a decoder language-model config",
            "point --model at the checkpoint's own config.json (for multimodal models the "
            "language model is read from text_config)",
        )
    return layers, heads, hidden


def _mla(cfg: dict[str, Any]) -> dict[str, Any] | None:
    """Multi-head latent attention's sizes (DeepSeek-style), None for other attention."""
    if cfg.get("kv_lora_rank") is None:
        return None
    return {  # check_numbers made these ints (or absent)
        "kv_lora_rank": cfg["kv_lora_rank"],
        "qk_rope_head_dim": cfg.get("qk_rope_head_dim") or 0,
        "qk_nope_head_dim": cfg.get("qk_nope_head_dim") or 0,
        "v_head_dim": cfg.get("v_head_dim") or 0,
        "q_lora_rank": cfg.get("q_lora_rank"),
    }


def _read_layer_kinds(facts: ModelFacts, cfg: dict[str, Any], config_path: str) -> None:
    """Which layers are full, sliding-window or linear attention; the hybrid and sliding facts that follow."""
    layers = facts.num_hidden_layers
    kinds, kinds_key = layer_kinds(cfg, layers)
    if kinds is None:
        kinds = _sliding_kinds(cfg, layers)
        kinds_key = "sliding_window" if kinds else None
    if kinds is None:
        kinds = ["full"] * layers
    if len(kinds) != layers:
        raise TQError(
            f"{config_path}: {kinds_key} has {len(kinds)} entries but num_hidden_layers is {layers}",
            "fix the config (the two must agree) or use the checkpoint's original config.json",
        )
    unknown = sorted({k for k in kinds if k.startswith("other:")})
    if unknown:
        facts.notes.append(
            f"layer types {', '.join(u[6:] for u in unknown)} are not modelled; treated as full attention"
        )
        kinds = ["full" if k.startswith("other:") else k for k in kinds]
    facts.full_attention_layers = [i for i, k in enumerate(kinds) if k == "full"]
    sliding = [i for i, k in enumerate(kinds) if k == "sliding"]
    if sliding:
        window = cfg.get("sliding_window")
        facts.sliding_window = {"size": int(window) if isinstance(window, int) else None, "layers": sliding}
    linear = [i for i, k in enumerate(kinds) if k == "linear"]
    facts.is_hybrid = bool(linear)
    if linear:
        facts.linear_attention = _linear_attention(cfg, linear, facts.serving_dtype)


# Integers of config.json that sizes are computed from, with the range a real checkpoint stays in (the
# largest published models: ~200 layers, hidden 32k, 256k vocab, 10M context). Outside it (a typo, 10**12, a
# string, 0 kv heads) the config is refused rather than planned: vLLM would refuse or divide by it.
_BOUNDS: dict[str, tuple[int, int]] = {
    "num_hidden_layers": (1, 4096),
    "num_attention_heads": (1, 1 << 16),
    "num_key_value_heads": (1, 1 << 16),
    "num_kv_heads": (1, 1 << 16),
    "n_head_kv": (1, 1 << 16),
    "multi_query_group_num": (1, 1 << 16),
    "hidden_size": (1, 1 << 20),
    "head_dim": (0, 1 << 16),  # 0 / null: derived from hidden_size (vLLM get_head_size)
    "intermediate_size": (0, 1 << 24),
    "vocab_size": (0, 1 << 26),
    "kv_lora_rank": (1, 1 << 16),
    "qk_rope_head_dim": (0, 1 << 16),
    "qk_nope_head_dim": (0, 1 << 16),
    "v_head_dim": (0, 1 << 16),
    "q_lora_rank": (0, 1 << 20),
    "num_experts": (0, 1 << 16),
    "num_local_experts": (0, 1 << 16),
    "n_routed_experts": (0, 1 << 16),
    "num_experts_per_tok": (0, 1 << 16),
    "mtp_num_hidden_layers": (0, 4096),
    "num_nextn_predict_layers": (0, 4096),
    "full_attention_interval": (0, 4096),
    "linear_num_key_heads": (0, 1 << 16),
    "linear_num_value_heads": (0, 1 << 16),
    "linear_key_head_dim": (0, 1 << 16),
    "linear_value_head_dim": (0, 1 << 16),
    "linear_conv_kernel_dim": (0, 1 << 10),
    **{key: (0, 1 << 32) for key in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")},
    **{key: (0, 1 << 32) for key in ("model_max_length", "max_target_positions", "max_sequence_length")},
    **{key: (0, 1 << 32) for key in ("max_seq_length", "seq_len")},
}
# Keys vLLM itself requires to be integers; for the rest a non-integer was always ignored (and still is).
_STRICT = (
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "num_kv_heads",
    "n_head_kv",
    "hidden_size",
    "head_dim",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
)


def _checked_dtype(value: Any, config_path: str) -> str:
    """torch_dtype as a name the sizing knows ("bfloat16", "torch.float16", ...), or one line naming the key."""
    name = value.replace("torch.", "") if isinstance(value, str) else None
    try:
        if name is None:
            raise ValueError(value)
        dtype_size(name)
    except ValueError:
        raise TQError(
            f"{config_path}: torch_dtype = {repr(value)[:40]} is not a dtype (bfloat16, float16, float32, ...)",
            "restore the checkpoint's original config.json",
        ) from None
    return name


def check_numbers(cfg: dict[str, Any], config_path: str) -> None:
    """TQError naming the key for a sizing integer of the wrong type or out of range (null means unset)."""
    for key, (low, high) in _BOUNDS.items():
        value = cfg.get(key)
        if value is None or (key not in _STRICT and (isinstance(value, bool) or not isinstance(value, int))):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
            raise TQError(
                f"{config_path}: {key} = {shown[:40]} is not an integer in {low}..{high}",
                "restore the checkpoint's original config.json (a real checkpoint stays inside that range)",
            )
    layer_list = cfg.get("layer_types")
    if isinstance(layer_list, list) and len(layer_list) > _BOUNDS["num_hidden_layers"][1]:
        raise TQError(f"{config_path}: layer_types lists {len(layer_list)} layers", "restore the original config.json")
    check_layer_lists(cfg, config_path)


# Per-layer lists and what each item must be: transformers writes layer_types / layers_block_type as lists of
# names ("full_attention", "linear_attention", "sliding_attention", "attention", "mamba") and MiniMax's
# attn_type_list as 0/1 integers. A string where the list belongs, or items of another type, would otherwise
# be read as some other layout (a string was once read as 3 full-attention layers).
_LAYER_LISTS = {"layer_types": str, "layers_block_type": str, "attn_type_list": int}


def check_layer_lists(cfg: dict[str, Any], config_path: str) -> None:
    for key, item in _LAYER_LISTS.items():
        value = cfg.get(key)
        if value is None:
            continue
        bad = not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, item) for v in value)
        if bad:
            shown = repr(value)[:40] if not isinstance(value, dict) else "an object"
            raise TQError(
                f"{config_path}: {key} = {shown} is not a list of {'names' if item is str else 'integers'}",
                "restore the checkpoint's original config.json",
            )


# vllm/transformers_utils/model_arch_config_convertor.py derive_max_model_len_and_key (vLLM 0.32.0): the
# smallest of these keys, except that model_max_length (Command-R / Cohere) overrides the rest.
_MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)


def _derived_max_len(cfg: dict[str, Any]) -> tuple[int | None, str | None]:
    if _int(cfg, "model_max_length"):
        return _int(cfg, "model_max_length"), "model_max_length"
    found = [(value, k) for k in _MAX_LEN_KEYS if (value := _int(cfg, k))]
    if not found:
        return None, None
    return min(found, key=lambda vk: vk[0])


def _linear_attention(cfg: dict[str, Any], layers: list[int], model_dtype: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "layers": layers,
        "num_key_heads": _int(cfg, "linear_num_key_heads"),
        "num_value_heads": _int(cfg, "linear_num_value_heads"),
        "key_head_dim": _int(cfg, "linear_key_head_dim"),
        "value_head_dim": _int(cfg, "linear_value_head_dim"),
        "conv_kernel": _int(cfg, "linear_conv_kernel_dim"),
        "conv_dtype": model_dtype,
        "state_dtype": str(cfg.get("mamba_ssm_dtype") or model_dtype or "bfloat16"),
    }
    out["kind"] = "gated_delta_net" if out["num_value_heads"] and out["key_head_dim"] else "unknown"
    return out
