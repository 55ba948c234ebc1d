"""The converted demo model served by the real CPU vLLM answers like the model it is: the proof that the
conversion (weights, Q/K permutation, tokenizer, chat template) is right end to end."""

from __future__ import annotations

import json
import urllib.request

import pytest

from support.real_model import served_name

pytestmark = pytest.mark.vllm


def _chat(server, question: str, max_tokens: int = 32) -> str:
    body = {
        "model": served_name(),
        "messages": [{"role": "user", "content": question}],
        "temperature": 0,
        "max_tokens": max_tokens,
    }
    request = urllib.request.Request(
        server.base_url + "/v1/chat/completions", data=json.dumps(body).encode(), headers=server.headers()
    )
    with urllib.request.urlopen(request, timeout=120) as resp:
        reply = json.load(resp)
    assert reply["model"] == served_name()
    return reply["choices"][0]["message"]["content"]


def test_greedy_answers_are_right(real_vllm_server):
    assert "Paris" in _chat(real_vllm_server, "What is the capital of France?")
    assert "7" in _chat(real_vllm_server, "How many days are in a week?")
    assert "4" in _chat(real_vllm_server, "What is 2 + 2?")


def test_served_with_bf16_kv_and_the_context_asked(real_vllm_server):
    request = urllib.request.Request(real_vllm_server.base_url + "/v1/models", headers=real_vllm_server.headers())
    with urllib.request.urlopen(request, timeout=30) as resp:
        models = json.load(resp)["data"]
    assert [(m["id"], m["max_model_len"]) for m in models] == [(served_name(), 2048)]
    with urllib.request.urlopen(real_vllm_server.base_url + "/metrics", timeout=30) as resp:
        metrics = resp.read(4 * 1024 * 1024).decode()
    assert 'cache_dtype="bfloat16"' in metrics
