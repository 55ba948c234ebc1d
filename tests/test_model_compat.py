"""compat rules, each in both directions (catches the bad case, passes the good one)."""

import json
from pathlib import Path

import pytest

from tqdeploy.findings import Severity
from tqdeploy.model import compat, facts_from_config, load_model_facts

MODELS = Path(__file__).parent / "fixtures" / "models"


def facts(name):
    return load_model_facts(str(MODELS / name))


def codes(problems):
    return [(p.severity, p.evidence["code"]) for p in problems]


def test_tp_qwen36_valid_sizes_and_replication():
    q = facts("qwen3.6-27b")
    assert compat.valid_tp_sizes(q) == [1, 2, 4, 8]  # docs/facts.md: 1/2/4/8 work
    assert compat.tensor_parallel_problems(q, 2) == []
    assert codes(compat.tensor_parallel_problems(q, 8)) == [(Severity.INFO, "TP_KV_REPLICATED")]
    bad = compat.tensor_parallel_problems(q, 3)
    assert codes(bad) == [(Severity.ERROR, "TP_HEADS")]
    assert "{1, 2, 4, 8}" in bad[0].remediation and bad[0].location == "--tensor-parallel-size"
    # 24 attention heads divide by 6, but the 16 linear key heads and 4 KV heads do not
    six = compat.tensor_parallel_problems(q, 6)[0].title
    assert "linear-attention key heads" in six and "KV heads" in six


def test_tp_mla_replication_note():
    assert codes(compat.tensor_parallel_problems(facts("deepseek-v2-lite"), 2)) == [
        (Severity.INFO, "TP_MLA_REPLICATED")
    ]
    assert compat.tensor_parallel_problems(facts("deepseek-v2-lite"), 1) == []


def test_max_model_len_rules():
    q = facts("qwen3.6-27b")
    assert compat.max_model_len_problems(q, 262144) == []
    assert compat.max_model_len_problems(q, 131072) == []  # "must be 131072" is false: any value <= native works
    assert codes(compat.max_model_len_problems(q, 262145)) == [(Severity.ERROR, "MML_TOO_LONG")]
    assert codes(compat.max_model_len_problems(q, 0)) == [(Severity.ERROR, "MML_INVALID")]
    # llama3/yarn rope types are already scaled in max_position_embeddings; linear/dynamic multiply it
    assert compat.config_max_model_len(facts("llama-3.1-8b")) == 131072
    assert compat.config_max_model_len(facts("deepseek-v2-lite")) == 163840
    lin = facts_from_config(
        {
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "hidden_size": 256,
            "max_position_embeddings": 4096,
            "rope_scaling": {"type": "linear", "factor": 4.0},
        }
    )
    assert compat.config_max_model_len(lin) == 16384
    none = facts_from_config({"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256})
    assert codes(compat.max_model_len_problems(none, 100)) == [(Severity.WARN, "MML_UNKNOWN")]


def test_turboquant_good_case_has_no_problems():
    assert compat.turboquant_problems(facts("llama-3.1-8b"), "turboquant_4bit_nc", "0.32.0", (9, 0)) == []
    assert compat.turboquant_problems(facts("llama-3.1-8b"), "fp8", "0.10.0", (7, 0)) == []  # not TurboQuant


@pytest.mark.parametrize(
    "kwargs,code",
    [
        ({"vllm_version": "0.19.1"}, "TQ_VERSION"),
        ({"compute_capability": (7, 5)}, "TQ_COMPUTE_CAPABILITY"),
        ({"attention_backend": "FLASHINFER"}, "TQ_BACKEND"),
        ({"attention_backend": "triton_attn"}, "TQ_BACKEND"),
    ],
)
def test_turboquant_bad_cases(kwargs, code):
    args = {"vllm_version": "0.32.0", "compute_capability": (9, 0), "attention_backend": None, **kwargs}
    got = compat.turboquant_problems(facts("llama-3.1-8b"), "turboquant_4bit_nc", **args)
    assert (Severity.ERROR, code) in codes(got)


def test_turboquant_head_dim_dtype_and_mla():
    odd = facts_from_config(
        {"num_hidden_layers": 4, "num_attention_heads": 4, "hidden_size": 384, "torch_dtype": "bfloat16"}
    )  # head_dim 96
    assert (Severity.ERROR, "TQ_HEAD_DIM") in codes(compat.turboquant_problems(odd, "turboquant_4bit_nc", "0.32.0"))
    fp32 = facts_from_config(
        {"num_hidden_layers": 4, "num_attention_heads": 4, "hidden_size": 512, "torch_dtype": "float32"}
    )
    # --dtype auto serves a float32 checkpoint in bfloat16 (vLLM _resolve_auto_dtype): TurboQuant works
    assert compat.turboquant_problems(fp32, "turboquant_4bit_nc", "0.32.0") == []
    assert fp32.serving_dtype == "bfloat16" and fp32.dtype_bytes == 2
    for asked in ("float32", "float"):
        got = compat.turboquant_problems(fp32, "turboquant_4bit_nc", "0.32.0", serving_dtype=asked)
        assert codes(got) == [(Severity.ERROR, "TQ_MODEL_DTYPE")] and got[0].location == "--dtype"
    assert compat.turboquant_problems(fp32, "turboquant_4bit_nc", "0.32.0", serving_dtype="half") == []
    assert (Severity.ERROR, "TQ_MLA") in codes(
        compat.turboquant_problems(facts("deepseek-v2-lite"), "turboquant_4bit_nc", "0.32.0")
    )


def test_turboquant_hybrid_known_bad_versions():
    q = facts("qwen3.6-27b")
    on_025 = compat.turboquant_problems(q, "turboquant_4bit_nc", "0.25.0", (9, 0))
    assert codes(on_025) == [(Severity.ERROR, "TQ_HYBRID_BUG")] and "#50709" in on_025[0].title
    assert codes(compat.turboquant_problems(q, "turboquant_4bit_nc", "0.32.0", (9, 0))) == [
        (Severity.WARN, "TQ_HYBRID_BUG")
    ]
    assert codes(compat.turboquant_problems(q, "turboquant_4bit_nc", "0.21.0", (9, 0))) == [
        (Severity.WARN, "TQ_HYBRID_SUPPORT")
    ]


def test_weights_fit():
    q = facts("qwen3.6-27b")
    q.weight_bytes = int(55.6e9)  # docs/facts.md: ~55.6 GB of BF16 weights
    assert compat.weights_fit_problems(q, 1, 150754820096, 0.92) == []
    card = 30 * (1 << 30)  # usable 27.6 GiB at 0.92
    bad = compat.weights_fit_problems(q, 1, card, 0.92)  # 51.8 GiB on one GPU
    assert codes(bad) == [(Severity.ERROR, "WEIGHTS_DONT_FIT")]
    assert "--tensor-parallel-size 4" in bad[0].remediation  # TP=2 leaves under 20% for the KV cache
    assert codes(compat.weights_fit_problems(q, 2, card, 0.92)) == [(Severity.WARN, "WEIGHTS_TIGHT")]
    assert compat.weights_fit_problems(q, 4, card, 0.92) == []


def test_problem_to_dict_is_json():
    p = compat.tensor_parallel_problems(facts("qwen3.6-27b"), 3)[0]
    assert json.loads(json.dumps(p.to_dict()))["severity"] == "error"


def test_turboquant_warns_about_dropped_attention_soft_cap():
    gemma = facts("gemma-2-9b")  # attn_logit_softcapping 50.0
    assert gemma.attn_logit_softcapping == 50.0
    got = compat.turboquant_problems(gemma, "turboquant_4bit_nc", "0.32.0", (9, 0))
    assert codes(got) == [(Severity.WARN, "TQ_SOFTCAP")] and "50" in got[0].title
    assert compat.turboquant_problems(gemma, "fp8", "0.32.0", (9, 0)) == []
    assert facts("llama-3.1-8b").attn_logit_softcapping is None


def test_config_context_length_is_derived_the_way_vllm_derives_it():
    base = {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256}
    # the smallest of the length keys (model_arch_config_convertor.derive_max_model_len_and_key)
    two = facts_from_config(dict(base, max_position_embeddings=32768, seq_length=8192))
    assert compat.config_max_model_len(two) == 8192 and two.max_len_key == "seq_length"
    assert codes(compat.max_model_len_problems(two, 16384)) == [(Severity.ERROR, "MML_TOO_LONG")]
    # model_max_length (Command-R) overrides the others
    cohere = facts_from_config(dict(base, max_position_embeddings=8192, model_max_length=131072))
    assert compat.config_max_model_len(cohere) == 131072
    # rope parameters nested per layer type: a linear factor scales, yarn does not
    nested = facts_from_config(
        dict(
            base,
            max_position_embeddings=4096,
            rope_parameters={
                "full_attention": {"rope_type": "linear", "factor": 2.0},
                "sliding_attention": {"rope_type": "default"},
            },
        )
    )
    assert compat.config_max_model_len(nested) == 8192
    yarn = facts_from_config(
        dict(base, max_position_embeddings=4096, rope_scaling={"rope_type": "yarn", "factor": 4.0})
    )
    assert compat.config_max_model_len(yarn) == 4096
