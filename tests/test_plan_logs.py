"""The planner against real vLLM start-up logs: KV memory as logged -> KV tokens as logged.

The logs print the KV memory with two decimals (GiB), so a plan is exact up to +-0.005 GiB: every
test asserts that the logged token count lies inside the planned range for that interval.
"""

import json
from pathlib import Path

import pytest

from tqdeploy.model import facts_from_config, load_model_facts
from tqdeploy.plan.vllmlog import calibrate, parse_kv_log

# Real start-up logs recorded on an H200 and on this kind of CPU machine (see the READMEs there).
LOGS = Path(__file__).parent / "fixtures" / "vllm-logs"
H200 = LOGS / "h200-vllm-0.25.0"
CPU = LOGS / "cpu-vllm-0.32.0"
MODELS = Path(__file__).parent / "fixtures" / "models"

# dense8 (fixtures README): Llama-style, 8 layers, 8 heads, 2 KV heads, head_dim 128, bf16.
DENSE8 = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 1024,
    "num_hidden_layers": 8,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "max_position_embeddings": 32768,
    "torch_dtype": "bfloat16",
}
# tiny (cpu-vllm README, tests/support/make_tiny_model.py): hidden 256, 4 heads, 2 KV heads, 2 layers.
TINY = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 512,
    "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16",
}


def q36like():
    """The Qwen3.6-27B shape without mamba_ssm_dtype: the logged block sizes (400 / 1568 tokens) and page
    padding (0.25% / 0.55%) are those of a bf16 linear-attention state, which is what that model used."""
    cfg = json.loads((MODELS / "qwen3.6-27b" / "config.json").read_text())
    del cfg["text_config"]["mamba_ssm_dtype"]
    return facts_from_config(cfg)


def test_parse_gpu_log():
    kv = parse_kv_log((H200 / "dense-cold.log").read_text())
    assert (kv.device, kv.kv_memory_gib, kv.kv_tokens, kv.max_model_len, kv.max_concurrency) == (
        "GPU",
        125.15,
        16_403_232,
        32768,
        500.59,
    )
    assert kv.kv_cache_dtype == "auto"


def test_parse_cpu_log_single_line_form():
    kv = parse_kv_log((CPU / "tiny-cold.log").read_text())
    assert (kv.device, kv.kv_memory_gib, kv.kv_tokens, kv.max_model_len) == ("CPU", 1.72, 1_806_336, 512)


def test_parse_refuses_a_log_without_kv_lines():
    with pytest.raises(ValueError, match="KV cache size"):
        parse_kv_log((H200 / "q36like-bf16-stalled.log").read_text())


@pytest.mark.parametrize(
    "log,bytes_per_token", [("dense-cold.log", 8192), ("dense-warm.log", 8192), ("dense-tq.log", 5168)]
)
def test_dense_bf16_and_turboquant_tokens(log, bytes_per_token):
    from tqdeploy.plan import kv_bytes_per_token

    f = facts_from_config(DENSE8)
    cal = calibrate(f, (H200 / log).read_text())
    # 5168 = 4 TurboQuant layers x 2 heads x 134 B + 4 boundary layers x 2 x 2 x 128 x 2 B
    assert kv_bytes_per_token(f, cal.logged.kv_cache_dtype) == bytes_per_token
    assert cal.within_rounding, cal.to_dict()
    assert abs(cal.error) < 1e-4


def test_turboquant_holds_1_585x_bf16():
    f = facts_from_config(DENSE8)
    bf16 = calibrate(f, (H200 / "dense-cold.log").read_text())
    tq = calibrate(f, (H200 / "dense-tq.log").read_text())
    assert round(tq.planned_tokens / bf16.planned_tokens, 3) == 1.585
    assert round(tq.logged.kv_tokens / bf16.logged.kv_tokens, 3) == 1.585


def test_hybrid_per_sequence_state_reproduces_1166617_tokens_exactly():
    cal = calibrate(q36like(), (H200 / "q36like-tq-hybrid-crash.log").read_text())
    assert cal.logged.kv_tokens == 1_166_617
    assert cal.planned_tokens == 1_166_617  # 761 blocks / (168 attention + 3 mamba blocks) x 262144
    assert cal.planned_low == cal.planned_high == 1_166_617
    assert cal.block_size == cal.logged.block_size == 1568


def test_hybrid_block_size_and_padding_match_the_bf16_log():
    from tqdeploy.plan.allocator import kv_capacity

    cap = kv_capacity(q36like(), "auto", 20 << 30, 262144, prefix_caching=False)
    assert cap.block_size == 400  # "Setting attention block size to 400 tokens"
    assert round(100 * (cap.mamba_page_padded - cap.mamba_page_bytes) / cap.mamba_page_bytes, 2) == 0.25
    tq = kv_capacity(q36like(), "turboquant_4bit_nc", 20 << 30, 262144, prefix_caching=False)
    assert round(100 * (tq.mamba_page_padded - tq.mamba_page_bytes) / tq.mamba_page_bytes, 2) == 0.55


def test_hybrid_prefix_caching_doubles_state_blocks():
    from tqdeploy.plan.allocator import kv_capacity

    none = kv_capacity(q36like(), "turboquant_4bit_nc", round(18.64 * (1 << 30)), 262144, prefix_caching=False)
    align = kv_capacity(q36like(), "turboquant_4bit_nc", round(18.64 * (1 << 30)), 262144, prefix_caching=True)
    assert (none.blocks_per_request, align.blocks_per_request) == (171, 174)
    assert align.fixed_state_bytes_per_seq == 2 * none.fixed_state_bytes_per_seq
    assert align.tokens < none.tokens


@pytest.mark.parametrize("log", ["tiny-cold.log", "tiny-warm.log"])
def test_cpu_tiny_model_within_2_percent(log):
    cal = calibrate(facts_from_config(TINY), (CPU / log).read_text())
    assert cal.block_size == 128
    assert abs(cal.error) < 0.02, cal.to_dict()
    assert cal.within_rounding


def test_two_layer_model_keeps_every_layer_at_bf16_under_turboquant():
    """vLLM's boundary rule skips min(2, layers // 2) layers at each end: on the 2-layer tiny model that is
    both layers, so turboquant_4bit_nc must hold the bf16 figure. The CPU log agrees (1,806,464 tokens):
    that log alone cannot show whether the CPU build applies TurboQuant."""
    from tqdeploy.plan.kvformula import boundary_skip_layers

    f = facts_from_config(TINY)
    assert boundary_skip_layers(f) == [0, 1]
    cal = calibrate(f, (CPU / "tiny-tq-not-in-effect.log").read_text())
    assert cal.logged.kv_cache_dtype == "turboquant_4bit_nc"
    assert cal.within_rounding and abs(cal.error) < 0.02


def test_budget_estimate_is_conservative_on_the_hybrid_log():
    """Budget side (an estimate): with the logged weights (50.22 GiB), util 0.55 on a 140.4 GiB H200 and
    --enforce-eager, the planned KV memory must not exceed what vLLM measured (18.64 GiB), and stay close."""
    from tqdeploy.plan.budget import make_budget

    f = q36like()
    f.weight_bytes = round(50.22 * (1 << 30))
    b = make_budget(f, gpu_memory_bytes=150754820096, tp=1, gpu_memory_utilization=0.55, enforce_eager=True)
    logged = 18.64 * (1 << 30)
    assert 0.95 * logged <= b.kv_bytes <= logged


GiB = 1024**3


@pytest.mark.parametrize(
    "log,dtype,bytes_per_token",
    [
        ("dense-cold.log", "auto", 8192),
        ("dense-fp8-eager.log", "fp8", 4096),
        ("dense-turboquant_k8v4-eager.log", "turboquant_k8v4", 5664),
        ("dense-tq.log", "turboquant_4bit_nc", 5168),
        ("dense-turboquant_3bit_nc-eager.log", "turboquant_3bit_nc", 4912),
    ],
)
def test_bytes_per_token_formula_matches_real_h200_runs(log, dtype, bytes_per_token):
    # Five KV dtypes measured on one H200: logged tokens x the formula's bytes per token must give back the
    # logged KV memory within its two-decimal rounding (+-0.005 GiB).
    from tqdeploy.plan import kv_bytes_per_token

    f = facts_from_config(DENSE8)
    logged = parse_kv_log((H200 / log).read_text())
    assert logged.kv_cache_dtype in (dtype, None) or dtype == "auto"
    assert kv_bytes_per_token(f, dtype) == bytes_per_token
    assert abs(logged.kv_tokens * bytes_per_token / GiB - logged.kv_memory_gib) <= 0.005


@pytest.mark.parametrize(
    "log", ["dense-fp8-eager.log", "dense-turboquant_k8v4-eager.log", "dense-turboquant_3bit_nc-eager.log"]
)
def test_planned_tokens_within_half_a_percent_of_real_h200_runs(log):
    # The planner models vLLM 0.32.0's block alignment for TurboQuant's skip layers
    # (platforms/interface.py _align_heterogeneous_kv_block_size); vLLM 0.25.0, which made these logs,
    # chose 32-token blocks, so the TurboQuant presets differ by block padding only (-0.05% k8v4, -0.2% 3bit_nc).
    cal = calibrate(facts_from_config(DENSE8), (H200 / log).read_text())
    assert abs(cal.error) < 0.005, cal.to_dict()
    assert cal.planned_tokens <= cal.logged.kv_tokens * 1.00001  # never promises more than vLLM gives
