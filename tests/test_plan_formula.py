"""KV bytes per token: vLLM's formulas, checked against hand-computed figures for each architecture.

Hand arithmetic per layer and token: dense = kv_heads x head_dim x 2 (K and V) x dtype bytes;
TurboQuant slot per head (head_dim 128): k8v4 128 + 68 = 196, 4bit_nc 66 + 68 = 134,
k3v4_nc 50 + 68 = 118, 3bit_nc 50 + 52 = 102; (head_dim 256): 4bit_nc 130 + 132 = 262.
"""

from pathlib import Path

import pytest

from tqdeploy.model import load_model_facts
from tqdeploy.plan import kv_bytes_per_token
from tqdeploy.plan.kvformula import NotApplicable, boundary_skip_layers, turboquant_slot_bytes

MODELS = Path(__file__).parent / "fixtures" / "models"
KiB = 1024


def facts(name):
    return load_model_facts(str(MODELS / name))


@pytest.mark.parametrize(
    "dtype,kib",
    [
        ("auto", 64),
        ("bfloat16", 64),
        ("fp8", 32),
        ("turboquant_k8v4", 24.25),
        ("turboquant_4bit_nc", 16.375),
        ("turboquant_k3v4_nc", 14.375),
        ("turboquant_3bit_nc", 12.375),
    ],
)
def test_qwen36_27b_table_from_facts(dtype, kib):
    # docs/facts.md: 16 full-attention layers, 4 KV heads, head_dim 256, TP=1; hybrids have no boundary skip.
    assert kv_bytes_per_token(facts("qwen3.6-27b"), dtype) == kib * KiB


def test_slot_sizes_match_vllm_config_py():
    assert [
        turboquant_slot_bytes(d, 128)
        for d in ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc")
    ] == [196, 134, 118, 102]
    assert turboquant_slot_bytes("turboquant_4bit_nc", 256) == 262
    assert turboquant_slot_bytes("turboquant_3bit_nc", 64) == 24 + 2 + 24 + 4  # already even


def test_llama_dense_gqa_with_boundary_skip():
    f = facts("llama-3.1-8b")
    assert kv_bytes_per_token(f, "auto") == 32 * 8 * 128 * 2 * 2 == 131072
    assert kv_bytes_per_token(f, "fp8") == 65536
    assert boundary_skip_layers(f) == [0, 1, 30, 31]
    # 28 TurboQuant layers x 8 heads x slot + 4 boundary layers at bf16 (4096 B each)
    assert kv_bytes_per_token(f, "turboquant_4bit_nc") == 28 * 8 * 134 + 4 * 4096 == 46400
    assert kv_bytes_per_token(f, "turboquant_k8v4") == 28 * 8 * 196 + 4 * 4096
    # extra skip layers on top of the boundary ones
    assert kv_bytes_per_token(f, "turboquant_4bit_nc", skip_layers=(15,)) == 27 * 8 * 134 + 5 * 4096


def test_tp_shards_kv_heads_then_replicates():
    f = facts("llama-3.1-8b")  # 8 KV heads
    assert kv_bytes_per_token(f, "auto", tp=2) == 65536
    assert kv_bytes_per_token(f, "auto", tp=8) == 16384
    assert kv_bytes_per_token(f, "auto", tp=16) == 16384  # one head per rank, replicated
    q = facts("qwen3.6-27b")  # 4 KV heads
    assert kv_bytes_per_token(q, "turboquant_4bit_nc", tp=2) == 16 * 2 * 262
    assert kv_bytes_per_token(q, "turboquant_4bit_nc", tp=8) == 16 * 1 * 262
    assert kv_bytes_per_token(q, "auto", tp=8) == kv_bytes_per_token(q, "auto", tp=4) == 16384


def test_qwen3_dense_and_moe():
    assert kv_bytes_per_token(facts("qwen3-8b"), "auto") == 36 * 8 * 128 * 4 == 147456
    moe = facts("qwen3-30b-a3b")
    assert moe.moe["num_experts"] == 128 and moe.moe["experts_per_token"] == 8
    assert kv_bytes_per_token(moe, "auto") == 48 * 4 * 128 * 4 == 98304
    assert kv_bytes_per_token(moe, "turboquant_4bit_nc") == 44 * 4 * 134 + 4 * 2048


def test_sliding_window_layers_count_per_token():
    g = facts("gemma-2-9b")
    assert g.sliding_window == {"size": 4096, "layers": list(range(0, 42, 2))}
    assert g.full_attention_layers == list(range(1, 42, 2))
    assert kv_bytes_per_token(g, "auto") == 42 * 8 * 256 * 4 == 344064
    m = facts("mistral-7b-v0.1")
    assert m.sliding_window["layers"] == list(range(32)) and m.full_attention_layers == []
    assert kv_bytes_per_token(m, "auto") == 131072


def test_mla_caches_one_latent_head_replicated_over_tp():
    d = facts("deepseek-v2-lite")
    assert d.kv_head_size == 512 + 64
    assert kv_bytes_per_token(d, "auto") == 27 * 576 * 2 == 31104
    assert kv_bytes_per_token(d, "auto", tp=2) == 31104  # MLA: every rank holds the latent
    assert kv_bytes_per_token(d, "fp8") == 27 * 576
    assert kv_bytes_per_token(d, "fp8_ds_mla") == 27 * 656
    with pytest.raises(NotApplicable, match="MLA"):
        kv_bytes_per_token(d, "turboquant_4bit_nc")
    with pytest.raises(NotApplicable, match="no MLA"):
        kv_bytes_per_token(facts("llama-3.1-8b"), "fp8_ds_mla")


def test_other_vllm_dtypes():
    f = facts("llama-3.1-8b")
    assert kv_bytes_per_token(f, "int8_per_token_head") == 32 * 8 * (256 + 8)
    assert kv_bytes_per_token(f, "int4_per_token_head") == 32 * 8 * (128 + 8)
    assert kv_bytes_per_token(f, "nvfp4") == 32 * 2 * 8 * (64 + 8)
    assert kv_bytes_per_token(f, "ultraquant_4bit") == 28 * 8 * 136 + 4 * 4096
    with pytest.raises(NotApplicable):
        kv_bytes_per_token(f, "int3")


def test_cache_dtype_list_is_the_installed_vllm_literal():
    import ast

    from tqdeploy.plan.kvformula import CACHE_DTYPES

    src = Path(__file__).resolve().parents[1] / ".venv-vllm/lib/python3.11/site-packages/vllm/config/cache.py"
    if not src.exists():
        pytest.skip("vLLM CPU build not installed")
    tree = ast.parse(src.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "CacheDType":
            names = tuple(e.value for e in node.value.slice.elts)
            break
    assert names == CACHE_DTYPES


def test_turboquant_table_matches_installed_presets():
    import ast

    from tqdeploy.model.tqdata import presets

    src = (
        Path(__file__).resolve().parents[1]
        / ".venv-vllm/lib/python3.11/site-packages/vllm/model_executor/layers/quantization/turboquant/config.py"
    )
    if not src.exists():
        pytest.skip("vLLM CPU build not installed")
    for node in ast.parse(src.read_text()).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "TQ_PRESETS":
            vllm = ast.literal_eval(node.value)
    assert set(vllm) == set(presets())
    for name, p in vllm.items():
        ours = presets()[name]
        assert (ours["key_bits"], ours["value_bits"], ours["norm_correction"]) == (
            p["key_quant_bits"],
            p["value_quant_bits"],
            p["norm_correction"],
        )


def test_weight_estimate_is_close_for_published_sizes():
    from tqdeploy.plan.budget import estimate_weight_bytes

    # parameter counts as the model names state them, bf16: 8B, 30B (MoE), 27B (hybrid, without vision/MTP)
    assert abs(estimate_weight_bytes(facts("llama-3.1-8b")) / 16e9 - 1) < 0.05
    assert abs(estimate_weight_bytes(facts("qwen3-30b-a3b")) / 60e9 - 1) < 0.05
    assert 50e9 < estimate_weight_bytes(facts("qwen3.6-27b")) < 55.6e9  # docs/facts.md: 55.6 GB incl. vision + MTP


def test_sliding_window_capacity_hand_computed():
    from tqdeploy.plan.allocator import kv_capacity

    gib = 10 << 30
    g = kv_capacity(facts("gemma-2-9b"), "auto", gib, 8192, max_in_flight_tokens=8192)
    # 21 global + 21 sliding layers: two groups of 21; a block spans 21 pages of 16 tokens x 8192 B
    assert g.group_sizes == [21, 21] and g.bytes_per_block == 21 * 16 * 8192
    # a request: 8192/16 = 512 global blocks + ceil(min(4095 + 8192, 8192) / 16) + 1 = 513 sliding blocks
    assert g.blocks_per_request == 512 + 513
    assert g.tokens == int(gib // g.bytes_per_block / 1025 * 8192)
    m = kv_capacity(facts("mistral-7b-v0.1"), "auto", gib, 32768, max_in_flight_tokens=8192)
    # one sliding group of all 32 layers: ceil((4095 + 8192) / 16) + 1 = 769 blocks instead of 2048
    assert m.blocks_per_request == 769 and m.bytes_per_block == 16 * 131072
    assert m.tokens == int(gib // (16 * 131072) / 769 * 32768)


def test_float32_checkpoint_is_planned_at_the_dtype_vllm_serves_it():
    from tqdeploy.model import facts_from_config

    # --dtype auto downcasts float32 checkpoints to bfloat16 (vllm/config/model.py _resolve_auto_dtype),
    # so the "auto" KV cache holds 2-byte elements, not 4
    f = facts_from_config(
        {
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "hidden_size": 256,
            "num_key_value_heads": 2,
            "torch_dtype": "float32",
        }
    )
    assert kv_bytes_per_token(f, "auto") == 2 * 2 * 2 * 64 * 2


def test_weight_estimate_of_a_quantized_checkpoint_uses_its_bits():
    import json

    from tqdeploy.model import facts_from_config
    from tqdeploy.plan.budget import estimate_weight_bytes

    cfg = json.loads((MODELS / "llama-3.1-8b" / "config.json").read_text())
    bf16 = estimate_weight_bytes(facts_from_config(cfg))
    embed = 2 * 128256 * 4096 * 2  # untied input and output embeddings stay bf16
    linear = (bf16 - embed) // 2  # parameters of the linear layers
    awq = dict(cfg, quantization_config={"quant_method": "awq", "bits": 4, "group_size": 128})
    assert estimate_weight_bytes(facts_from_config(awq)) == linear // 2 + linear // 128 * 2 + embed
    fp8 = dict(cfg, quantization_config={"quant_method": "fp8", "activation_scheme": "dynamic"})
    assert estimate_weight_bytes(facts_from_config(fp8)) == linear + embed
