"""TurboQuant really in effect? Real KV capacity (logs, /metrics) against the planner, on recorded runs."""

from __future__ import annotations

from pathlib import Path

from tqdeploy.model import facts_from_config
from tqdeploy.profile.kvcheck import kv_figures
from tqdeploy.profile.metrics import cache_config_figures, parse_metrics

LOGS = Path(__file__).parent / "fixtures" / "vllm-logs"
CPU = LOGS / "cpu-vllm-0.32.0"
H200 = LOGS / "h200-vllm-0.25.0"

# the shapes recorded in the fixture READMEs (same dicts as tests/test_plan_logs.py)
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


def ids(findings):
    return {(f.id, f.severity.value) for f in findings}


def test_metrics_parsed_with_prometheus_client():
    scrape = parse_metrics((H200 / "dense-tq.metrics.txt").read_text())
    info = cache_config_figures(scrape.cache_config)
    assert info == {
        "cache_dtype": "turboquant_4bit_nc",
        "num_gpu_blocks": 812544,
        "block_size": 32,
        "kv_cache_size_tokens": 26001408,
    }
    assert scrape.values["kv_usage"] == 0.0 and scrape.values["generation_tokens"] == 16.0
    assert scrape.histograms["itl"]["count"] == 15.0


def test_turboquant_in_effect_on_the_h200():
    info = cache_config_figures(parse_metrics((H200 / "dense-tq.metrics.txt").read_text()).cache_config)
    kv, findings = kv_figures((H200 / "dense-tq.log").read_text(), info, facts_from_config(DENSE8))
    # README: 5,168 B/token = 4 TQ layers x 2 heads x 134 B + 4 boundary layers at bf16
    assert kv["bytes_per_token_planned"] == 5168 and round(kv["bytes_per_token_real"]) == 5168
    assert kv["real_tokens"] == 26001408
    assert abs(kv["planned_tokens"] - 26001408) / 26001408 < 0.01
    assert ids(findings) == {("TQ431", "ok")}


def test_bf16_plan_matches_on_the_h200():
    kv, findings = kv_figures((H200 / "dense-cold.log").read_text(), None, facts_from_config(DENSE8))
    assert kv["cache_dtype"] == "auto" and kv["real_tokens"] == 16403232
    assert ids(findings) == {("TQ431", "ok")}


def test_turboquant_not_in_effect_on_the_cpu_build():
    kv, findings = kv_figures((CPU / "tiny-tq-not-in-effect.log").read_text(), None, facts_from_config(TINY))
    assert kv["cache_dtype"] == "turboquant_4bit_nc" and kv["real_tokens"] == 1806464
    assert abs(kv["bytes_per_token_real"] - 1024) < 2  # bf16: 2 layers x 2 heads x K+V x 64 x 2 B
    (tq,) = [f for f in findings if f.id == "TQ430"]
    assert tq.severity.value == "error"
    assert tq.evidence["layers_kept_at_model_dtype"] == "2 of 2"
    assert "boundary layer" in tq.title


def test_planned_and_real_differ():
    # the dense8 log read as if the tiny model had produced it: the plan is far from the real count
    kv, findings = kv_figures((H200 / "dense-cold.log").read_text(), None, facts_from_config(TINY))
    assert ("TQ431", "warn") in ids(findings)
    assert kv["planned_tokens"] > 2 * kv["real_tokens"]


def test_without_a_model_no_plan_is_claimed():
    kv, findings = kv_figures((H200 / "dense-tq.log").read_text(), None, None)
    assert kv["planned_tokens"] is None and "--model" in kv["note"] and findings == []


def test_crashed_start_before_kv_allocation():
    text = (H200 / "q36like-bf16-stalled.log").read_text()
    kv, findings = kv_figures(text, None, facts_from_config(DENSE8))
    assert kv["real_tokens"] is None and "KV cache" in kv["note"] and findings == []
