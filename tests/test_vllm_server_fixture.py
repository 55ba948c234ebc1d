"""The shared real-vLLM fixture itself: it serves, exposes metrics, and stops its whole process group."""

import json
import urllib.request

import pytest

from support.vllm_server import vllm_server  # noqa: F401

pytestmark = pytest.mark.vllm


def test_real_vllm_serves_completions_and_metrics(vllm_server):  # noqa: F811
    body = json.dumps({"model": str(vllm_server.model_dir), "prompt": "Hello", "max_tokens": 4}).encode()
    req = urllib.request.Request(
        vllm_server.base_url + "/v1/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=120) as resp:
        data = json.load(resp)
    assert data["usage"]["completion_tokens"] >= 1
    with urllib.request.urlopen(vllm_server.base_url + "/metrics", timeout=10) as resp:
        metrics = resp.read().decode()
    assert "vllm:kv_cache_usage_perc" in metrics
    assert "KV cache size:" in vllm_server.log_text
