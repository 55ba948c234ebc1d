"""The weight estimate from config.json, for when no safetensors header was read.

One figure for every user: plan's memory budget (plan/budget.py) and the checkpoint's fit check
(model/compat.py weights_fit_problems) read the same estimate, so they cannot disagree about a model.
"""

from __future__ import annotations

from tqdeploy.model.facts import ModelFacts


def estimate_weight_bytes(facts: ModelFacts) -> int:
    """Parameter bytes from the config when no safetensors headers were read (dense/MoE/hybrid decoders;
    vision towers and MTP heads are not counted; quantized linear layers at their bits): a rough figure,
    always labelled as an estimate."""
    h, layers = facts.hidden_size, facts.num_hidden_layers
    q = facts.num_attention_heads * facts.head_dim
    kv = 2 * facts.num_key_value_heads * facts.head_dim
    attn = h * (q + kv) + q * h
    inter = facts.intermediate_size or 4 * h
    mlp = 3 * h * inter
    if facts.moe and facts.moe.get("moe_intermediate_size"):
        m = facts.moe
        dense_layers = m.get("first_k_dense_replace") or 0
        expert = 3 * h * m["moe_intermediate_size"]
        shared = (m.get("shared_experts") or 0) * expert
        moe_mlp = m["num_experts"] * expert + shared + h * m["num_experts"]
        mlp_total = dense_layers * mlp + (layers - dense_layers) * moe_mlp
    else:
        mlp_total = layers * mlp
    vocab = facts.vocab_size or 0
    embed = vocab * h * (1 if facts.tie_word_embeddings else 2)
    attn_total = len(facts.full_attention_layers or range(layers)) * attn
    la = facts.linear_attention or {}
    if la.get("kind") == "gated_delta_net":  # q, k, v, z and b, a projections, conv, out projection
        kd, vd = la["num_key_heads"] * la["key_head_dim"], la["num_value_heads"] * la["value_head_dim"]
        per = h * (2 * kd + 2 * vd + 2 * la["num_value_heads"]) + (2 * kd + vd) * la["conv_kernel"] + vd * h
        attn_total += len(la["layers"]) * per
    elif la:
        attn_total += len(la.get("layers", [])) * attn  # unknown mixer: sized like attention
    linear = attn_total + mlp_total
    quant = facts.quantization or {}
    bits, group = quant.get("bits"), quant.get("group_size")
    if isinstance(bits, int) and not isinstance(bits, bool) and 0 < bits < 8 * facts.dtype_bytes:
        # AWQ/GPTQ/compressed-tensors/FP8 store the linear layers' weights at `bits` each, plus one
        # model-dtype scale per group; embeddings and norms stay at the model dtype.
        scales = linear // group * facts.dtype_bytes if isinstance(group, int) and group > 0 else 0
        return int(linear * bits // 8 + scales + embed * facts.dtype_bytes)  # bits: config.json's number
    return int((linear + embed) * facts.dtype_bytes)
