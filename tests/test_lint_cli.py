"""`tqdeploy lint` on the command line: exit codes, --fix, --json, --file, usage errors."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

FIX = Path(__file__).resolve().parent / "fixtures" / "lint"


def test_valid_command_exits_0(run_cli):
    code, out, err = run_cli("lint", "--", "vllm", "serve", "Qwen/Qwen3-8B", "--host", "127.0.0.1")
    assert code == 0, err
    assert "no findings" in out


def test_error_exits_1_and_json_contract(run_cli):
    code, out, _ = run_cli(
        "lint", "--json", "--", "vllm", "serve", "m", "--kv-cache-dtype", "turboquant_5bit", "--host", "127.0.0.1"
    )
    assert code == 1
    data = json.loads(out)
    assert data["schema"] == "tqdeploy.lint/1" and data["vllm_version"] == "0.32.0"
    assert set(data) == {"schema", "vllm_version", "command", "fixed_command", "findings"}
    f = data["findings"][0]
    assert set(f) == {"id", "severity", "flag", "message", "fix"}
    assert (f["id"], f["severity"], f["flag"]) == ("TQ302", "error", "--kv-cache-dtype")
    assert "turboquant_4bit_nc" in data["fixed_command"]


def test_warnings_only_exit_0(run_cli):
    code, out, _ = run_cli("lint", "--json", "--", "vllm", "serve", "m", "--host", "0.0.0.0")
    assert code == 0
    assert json.loads(out)["findings"][0]["id"] == "TQ322"


def test_fix_prints_only_the_corrected_command(run_cli):
    code, out, _ = run_cli(
        "lint", "--fix", "--", "vllm", "serve", "m", "--enable-chunked-prefill=False", "--host", "127.0.0.1"
    )
    assert code == 1
    assert shlex.split(out) == ["vllm", "serve", "m", "--no-enable-chunked-prefill", "--host", "127.0.0.1"]


def test_file_mode(run_cli):
    code, out, _ = run_cli("lint", "--json", "--file", str(FIX / "docker_blog.sh"))
    assert code == 1
    data = json.loads(out)
    assert "hf_DockerBlogSecretValue987" not in out
    assert {f["id"] for f in data["findings"]} >= {"TQ330", "TQ331"}


def test_usage_errors_exit_2(run_cli, tmp_path):
    assert run_cli("lint")[0] == 2
    code, _, err = run_cli("lint", "--file", str(FIX / "good_serve.sh"), "--", "vllm", "serve", "m")
    assert code == 2 and "either" in err
    code, _, err = run_cli("lint", "--file", str(tmp_path / "missing.sh"))
    assert code == 2 and "cannot read script" in err and "Traceback" not in err
    code, _, err = run_cli("lint", "--vllm-version", "0.1.0", "--", "vllm", "serve", "m")
    assert code == 2 and "no vLLM argument schema" in err
    code, _, err = run_cli("lint", "--", "echo", "hi")
    assert code == 2 and "no vLLM command found" in err
    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/sh\necho hello\n")
    code, out, err = run_cli("lint", "--file", str(plain))
    assert code == 2 and f"no vLLM command found in {plain}" in err and out == ""
    code, _, err = run_cli("lint", "--gpu", "Z9000", "--", "vllm", "serve", "m")
    assert code == 2 and "no GPU named" in err


def test_real_subprocess(tqdeploy_exe):
    proc = subprocess.run(
        [tqdeploy_exe, "lint", "--file", str(FIX / "blog_turboquant_wrong.sh")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "TQ310" in proc.stdout and "hf_BlogPostTokenDoNotShare123" not in proc.stdout + proc.stderr


def test_every_lint_rule_has_a_doc_page(run_cli):
    from tqdeploy.lint.rules import load_rules

    rule_ids = sorted(load_rules())
    assert len(rule_ids) >= 20
    for rid in rule_ids:
        code, out, err = run_cli("explain", rid)
        assert code == 0, err
        assert out.startswith(f"# {rid}:") and "## Fix" in out
