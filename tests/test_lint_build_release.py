"""A keyed build on a release that hashes VLLM_API_KEY into its compile cache (vLLM 0.25.0): the build does not warn
about its own serve.sh (TQ344: it starts through launch_vllm.py, not an exported key), and `lint --file` of that
serve.sh checks it against the release the build pinned (its tqdeploy.lock.json), not tqdeploy's default.
Both were seen on the H200 acceptance run: a TQ344 note at build, and `lint --file serve.sh` reporting 0.32.0."""

from __future__ import annotations

import json
from pathlib import Path

SPEC = """schema = 1
name = "keyed-025"
variant = "gpu"

[model]
path = "./models/m"
served_name = "m"

[vllm]
version = "0.25.0"
kv_cache_dtype = "turboquant_k8v4"
max_model_len = 16384

[image]
base = "vllm/vllm-openai:v0.25.0"

[server]
host = "127.0.0.1"
port = 18000
api_key_file = "./secrets/vllm-api-key"
"""


def test_keyed_025_build_does_not_flag_its_own_serve_sh_and_lint_uses_its_release(run_cli, tmp_path: Path):
    spec = tmp_path / "tqdeploy.toml"
    spec.write_text(SPEC)
    out = tmp_path / "b"
    code, stdout, stderr = run_cli("build", str(spec), "--out", str(out))
    assert code == 0, stderr
    assert "TQ344" not in stdout + stderr
    code, stdout, stderr = run_cli("lint", "--file", str(out / "serve.sh"), "--json")
    report = json.loads(stdout)
    assert code == 0 and report["vllm_version"] == "0.25.0", stdout + stderr
    # only TQ349 (TurboQuant with prefix caching on, measured on 0.25.0): nothing about the key
    assert [f["id"] for f in report["findings"]] == ["TQ349"]
    # the same script with the key exported, as a hand-written launch would: TQ344 on this release
    hand = tmp_path / "hand" / "serve.sh"
    hand.parent.mkdir()
    hand.write_text('#!/bin/sh\nexport VLLM_API_KEY="$(cat /run/secrets/k)"\nexec vllm serve m --port 8000\n')
    code, stdout, _ = run_cli("lint", "--file", str(hand), "--vllm-version", "0.25.0", "--json")
    assert "TQ344" in {f["id"] for f in json.loads(stdout)["findings"]}
