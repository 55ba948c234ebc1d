"""ModelFacts from config.json: the fields vLLM reads, for each fixture architecture, and bad input."""

import json
from pathlib import Path

import pytest

from tqdeploy.errors import TQError
from tqdeploy.model import facts_from_config, load_model_facts

MODELS = Path(__file__).parent / "fixtures" / "models"


def test_qwen36_nested_text_config_and_hybrid_layers():
    f = load_model_facts(str(MODELS / "qwen3.6-27b"))
    assert (f.architecture, f.model_type) == ("Qwen3_5ForConditionalGeneration", "qwen3_5_text")
    assert (f.num_hidden_layers, f.num_attention_heads, f.num_key_value_heads, f.head_dim) == (64, 24, 4, 256)
    assert f.is_hybrid and f.full_attention_layers == list(range(3, 64, 4))
    la = f.linear_attention
    assert (la["num_key_heads"], la["num_value_heads"], la["key_head_dim"], la["conv_kernel"]) == (16, 48, 128, 4)
    assert la["state_dtype"] == "float32" and len(la["layers"]) == 48
    assert f.dtype == "bfloat16" and f.max_position_embeddings == 262144 and f.mtp_layers == 1
    assert f.weight_bytes is None and f.turbo_quant_config is None
    d = f.to_dict()
    assert json.loads(json.dumps(d))["kv_layers"] == f.full_attention_layers


def test_full_attention_interval_alone_gives_the_same_layers():
    cfg = json.loads((MODELS / "qwen3.6-27b" / "config.json").read_text())
    del cfg["text_config"]["layer_types"]
    f = facts_from_config(cfg)
    assert f.full_attention_layers == list(range(3, 64, 4))


@pytest.mark.parametrize(
    "key,values,full",
    [
        ("layers_block_type", ["mamba", "attention", "mamba", "hybrid"], [1, 3]),  # Jamba/Zamba2 convention
        ("attn_type_list", [0, 0, 1, 0], [2]),  # MiniMax convention
    ],
)
def test_other_hybrid_conventions(key, values, full):
    f = facts_from_config({"num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512, key: values})
    assert f.is_hybrid and f.full_attention_layers == full


def test_head_dim_derived_and_kv_heads_default():
    f = facts_from_config({"num_hidden_layers": 2, "num_attention_heads": 16, "hidden_size": 2048})
    assert f.head_dim == 128 and f.num_key_value_heads == 16 and not f.is_hybrid
    assert f.full_attention_layers == [0, 1]
    # the other KV-head keys vLLM reads (Falcon n_head_kv, ChatGLM multi_query_group_num)
    for key in ("n_head_kv", "multi_query_group_num", "num_attention_groups"):
        g = facts_from_config({"num_hidden_layers": 2, "num_attention_heads": 16, "hidden_size": 2048, key: 2})
        assert g.num_key_value_heads == 2, key


def test_qwen2_sliding_window_ignored_when_disabled():
    f = facts_from_config(
        {
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "hidden_size": 256,
            "sliding_window": 4096,
            "use_sliding_window": False,
        }
    )
    assert f.sliding_window is None


def test_gemma3_pattern():
    f = facts_from_config(
        {
            "model_type": "gemma3_text",
            "num_hidden_layers": 12,
            "num_attention_heads": 8,
            "hidden_size": 1024,
            "sliding_window": 1024,
            "sliding_window_pattern": 6,
        }
    )
    assert f.full_attention_layers == [5, 11] and len(f.sliding_window["layers"]) == 10


def test_mla_and_moe_fields():
    f = load_model_facts(str(MODELS / "deepseek-v2-lite"))
    assert f.mla == {
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "q_lora_rank": None,
    }
    assert f.moe["num_experts"] == 64 and f.moe["shared_experts"] == 2 and f.moe["first_k_dense_replace"] == 1


@pytest.mark.parametrize(
    "qcfg,expect",
    [
        (
            {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
            {"method": "awq", "bits": 4, "group_size": 128},
        ),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False}, {"method": "gptq", "bits": 4}),
        (
            {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
            {"method": "fp8", "bits": 8, "weight_block_size": [128, 128]},
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "group_0": {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}
                },
            },
            {"method": "compressed-tensors", "bits": 4},
        ),
    ],
)
def test_quantization_config(qcfg, expect):
    f = facts_from_config(
        {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256, "quantization_config": qcfg}
    )
    for k, v in expect.items():
        assert f.quantization[k] == v


def test_missing_dir_bad_json_and_non_decoder_config(tmp_path):
    with pytest.raises(TQError, match="neither an existing folder nor REPO@REV"):
        load_model_facts(str(tmp_path / "nope"))
    with pytest.raises(TQError, match="has no config.json"):
        load_model_facts(str(tmp_path))
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(TQError, match=r"config.json is not valid JSON"):
        load_model_facts(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "whisper"}))
    with pytest.raises(TQError, match="lacks num_hidden_layers, num_attention_heads, hidden_size"):
        load_model_facts(str(tmp_path))
    (tmp_path / "config.json").write_text(
        json.dumps(
            {"num_hidden_layers": 3, "num_attention_heads": 4, "hidden_size": 64, "layer_types": ["full_attention"]}
        )
    )
    with pytest.raises(TQError, match="layer_types has 1 entries but num_hidden_layers is 3"):
        load_model_facts(str(tmp_path))
    with pytest.raises(TQError, match="is a file"):
        load_model_facts(str(tmp_path / "config.json"))
