"""turbo_quant_config: tqdeploy's documented hint, validated; absent -> the truth (vLLM needs no field)."""

import json
from pathlib import Path

import pytest

from tqdeploy.doctor.registry import CheckContext, run_checks
from tqdeploy.model import facts_from_config

MODELS = Path(__file__).parent / "fixtures" / "models"
BASE = json.loads((MODELS / "llama-3.1-8b" / "config.json").read_text())


def with_hint(hint):
    return facts_from_config(dict(BASE, turbo_quant_config=hint))


def tq202(facts):
    import tqdeploy.doctor.checks.model  # noqa: F401  (registers TQ2xx)

    return run_checks(CheckContext(model=facts), ["TQ202"])


@pytest.mark.parametrize(
    "hint,dtype,skips",
    [
        ({"preset": "turboquant_4bit_nc"}, "turboquant_4bit_nc", []),
        ({"key_bits": 8, "value_bits": 4}, "turboquant_k8v4", []),
        ({"key_bits": 3, "value_bits": 3, "skip_layers": [5, 4, 5]}, "turboquant_3bit_nc", [4, 5]),
        ({"preset": "turboquant_k3v4_nc", "key_bits": 3, "value_bits": 4}, "turboquant_k3v4_nc", []),
    ],
)
def test_valid_hints(hint, dtype, skips):
    f = with_hint(hint)
    assert f.turbo_quant_config == {"kv_cache_dtype": dtype, "skip_layers": skips}
    assert f.turbo_quant_config_problems == []
    assert [x.severity.value for x in tq202(f)] == ["info"]


@pytest.mark.parametrize(
    "hint,needle",
    [
        ("turboquant", "is a str, not an object"),
        ({"preset": "turbo"}, "not a vLLM TurboQuant preset"),
        ({"key_bits": 2, "value_bits": 2}, "no vLLM TurboQuant preset has key_bits=2"),
        ({"key_bits": 4}, "needs both key_bits and value_bits"),
        ({"preset": "turboquant_4bit_nc", "key_bits": 3, "value_bits": 3}, "contradicts"),
        ({"skip_layers": [0]}, "names no preset and no bits"),
        ({"preset": "turboquant_4bit_nc", "skip_layers": [40]}, "outside 0..31"),
        ({"preset": "turboquant_4bit_nc", "skip_layers": "0,1"}, "list of layer indices"),
    ],
)
def test_invalid_hints_are_errors(hint, needle):
    f = with_hint(hint)
    assert f.turbo_quant_config is None
    assert any(needle in p.title for p in f.turbo_quant_config_problems), f.turbo_quant_config_problems
    assert "error" in [x.severity.value for x in tq202(f)]


def test_blog_style_fields_warn_that_vllm_ignores_them():
    f = with_hint({"preset": "turboquant_4bit_nc", "turboquant_window_size": 128, "sink_tokens": 4})
    assert f.turbo_quant_config["kv_cache_dtype"] == "turboquant_4bit_nc"
    sev = [x.severity.value for x in tq202(f)]
    assert sev.count("warn") == 1 and "info" in sev
    warn = [x for x in tq202(f) if x.severity.value == "warn"][0]
    assert "sink_tokens" in warn.title and "vLLM ignores" in warn.title


def test_absent_field_is_info_telling_the_truth():
    (finding,) = tq202(facts_from_config(BASE))
    assert finding.severity.value == "info"
    assert "vLLM reads no such field" in finding.title
    assert "--kv-cache-dtype turboquant_4bit_nc" in finding.remediation


def test_hint_becomes_plans_default():
    from tqdeploy.plan import make_plan

    f = with_hint({"preset": "turboquant_k3v4_nc", "skip_layers": [10]})
    plan = make_plan(f, gpu_memory_bytes=150754820096, max_model_len=131072)
    assert plan.recommended == "turboquant_k3v4_nc"
    assert "turbo_quant_config" in plan.recommendation_reason
    assert 10 in plan.row("turboquant_k3v4_nc").skip_layers


def test_invalid_hint_is_ignored_by_plan_and_said_so():
    from tqdeploy.plan import make_plan

    plan = make_plan(with_hint({"preset": "turbo"}), gpu_memory_bytes=150754820096, max_model_len=131072)
    assert plan.recommended == "auto"
    assert any("turbo_quant_config (error)" in n for n in plan.notes)
