"""The shared real-vLLM fixture itself: keyed like a deployment, it serves with the key, refuses without it,
exposes metrics, and stops its whole process group."""

import json
import urllib.error
import urllib.request

import pytest

from support.vllm_server import vllm_server  # noqa: F401

pytestmark = pytest.mark.vllm


def test_real_vllm_serves_completions_and_metrics(vllm_server):  # noqa: F811
    body = json.dumps({"model": str(vllm_server.model_dir), "prompt": "Hello", "max_tokens": 4}).encode()
    url = vllm_server.base_url + "/v1/completions"
    for headers in ({"Content-Type": "application/json"}, {**vllm_server.headers(), "Authorization": "Bearer wrong"}):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=120)
        assert refused.value.code == 401
    with urllib.request.urlopen(
        urllib.request.Request(url, data=body, headers=vllm_server.headers()), timeout=120
    ) as resp:
        data = json.load(resp)
    assert data["usage"]["completion_tokens"] >= 1
    assert vllm_server.key and vllm_server.key not in " ".join(vllm_server.args)  # the environment, not argv
    assert vllm_server.key not in vllm_server.log_text
    with urllib.request.urlopen(vllm_server.base_url + "/metrics", timeout=10) as resp:
        metrics = resp.read().decode()
    assert "vllm:kv_cache_usage_perc" in metrics
    assert "KV cache size:" in vllm_server.log_text
