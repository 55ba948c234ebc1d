"""TQ344 through lint and doctor: VLLM_API_KEY in vLLM's environment warns on a release that hashes it into the
compile cache (checks/compile-cache-env.json), and TQ323's fix stops advising the export there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SNAPSHOT = Path(__file__).parent / "fixtures" / "hosts" / "h200-1gpu-live.json"


@pytest.mark.parametrize("version,warned", [("0.25.0", True), ("0.32.0", False)])
def test_doctor_warns_where_the_release_hashes_the_key(run_cli, version, warned):
    code, out, err = run_cli(
        "doctor", "--snapshot", str(SNAPSHOT), "--vllm-version", version, "--json", "--",
        "VLLM_API_KEY=abc", "vllm", "serve", "Qwen/Qwen3-8B", "--host", "127.0.0.1",
    )  # fmt: skip
    assert code in (0, 1), err
    ids = {f["id"] for f in json.loads(out)["findings"]}
    assert ("TQ344" in ids) is warned
    assert "abc" not in out  # the value is never shown


def test_an_exported_key_in_a_script_warns_and_the_argv_fix_does_not_advise_it(run_cli, tmp_path):
    script = tmp_path / "serve.sh"
    script.write_text('export VLLM_API_KEY="$(cat /run/secrets/k)"\nvllm serve Qwen/Qwen3-8B --api-key sk-x\n')
    code, out, _ = run_cli("lint", "--json", "--no-live", "--vllm-version", "0.25.0", "--file", str(script))
    found = {f["id"]: f for f in json.loads(out)["findings"]}
    assert "TQ344" in found and "TQ323" in found
    assert (
        "do not export VLLM_API_KEY" in found["TQ323"]["remediation"]
        and "launch_vllm.py" in found["TQ344"]["remediation"]
    )
    code, out, _ = run_cli("lint", "--json", "--no-live", "--vllm-version", "0.32.0", "--file", str(script))
    found = {f["id"]: f for f in json.loads(out)["findings"]}
    assert "TQ344" not in found and "before starting vLLM" in found["TQ323"]["remediation"]  # the export is fine there


def test_the_data_names_every_pinned_release():
    from tqdeploy.lint.rules.cachekey import api_key_in_compile_key
    from tqdeploy.vllmfacts.schema import available_versions

    assert {v: api_key_in_compile_key(v) for v in available_versions()} == {"0.25.0": True, "0.32.0": False}
