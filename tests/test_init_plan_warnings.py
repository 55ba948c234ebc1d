"""`tqdeploy init` sizes TP with the planner; a plan whose problems are warnings must still be used.

Regression: plan problems became Finding objects and init indexed them as dicts (TypeError, exit 3);
mypy's check of spec/init_spec.py found it.
"""

from __future__ import annotations

import json

from conftest import FIXTURES


def test_init_uses_a_plan_with_only_warnings(run_cli, tmp_path):
    # Llama-3.1-8B's shape with 284 layers: its bf16 weights fill over 90% of an H200's usable memory,
    # so the plan warns (TQ206 "little room") but still recommends a KV dtype.
    config = json.loads((FIXTURES / "models" / "llama-3.1-8b" / "config.json").read_text())
    config.update(num_hidden_layers=284, max_position_embeddings=8192)
    model = tmp_path / "big-llama"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config))
    code, stdout, _ = run_cli("plan", "--model", str(model), "--gpu", "H200", "--json")
    plan = json.loads(stdout)
    assert code == 0 and plan["recommended"] and {p["severity"] for p in plan["problems"]} == {"warn"}

    out = tmp_path / "tqdeploy.toml"
    snapshot = FIXTURES / "hosts" / "h200-1gpu.json"
    code, stdout, err = run_cli("init", "--model", str(model), "--snapshot", str(snapshot), "--out", str(out), "--json")
    assert code == 0, err
    chosen = json.loads(stdout)["chosen"]
    assert chosen["vllm.kv_cache_dtype"].startswith("tqdeploy plan:")
    assert "smallest size tqdeploy plan finds workable" in chosen["vllm.tensor_parallel_size"]
