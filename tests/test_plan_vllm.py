"""The planner against the real vLLM (CPU build) serving the generated tiny model: for the KV memory the
server logs, the planned KV tokens must be within 2% of the "CPU KV cache size" it logs."""
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
