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
    assert set(f) == {"id", "severity", "title", "evidence", "remediation", "area"}  # doctor's shape (Finding)
    assert (f["id"], f["severity"], f["evidence"]["flag"]) == ("TQ302", "error", "--kv-cache-dtype")
    assert f["area"] == "arguments" and f["remediation"] == "use turboquant_4bit_nc"
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


FINDING_KEYS = {"id", "severity", "title", "evidence", "remediation", "area"}
QWEN36 = str(Path(__file__).parent / "fixtures" / "models" / "qwen3.6-27b")


def _explainable(run_cli, shown_id: str) -> None:
    code, out, err = run_cli("explain", shown_id)
    assert code == 0 and out.startswith("# "), (shown_id, err)


def test_lint_plan_and_doctor_json_share_one_finding_shape_and_every_id_is_explainable(run_cli):
    _, lint_out, _ = run_cli("lint", "--json", "--", "vllm", "serve", "m", "--quantization", "turboquant")
    _, plan_out, _ = run_cli("plan", "--json", "--model", QWEN36, "--gpu", "H200", "--gpus", "3")
    _, doctor_out, _ = run_cli("doctor", "--json", "--offline")
    lint, plan, doctor = json.loads(lint_out), json.loads(plan_out), json.loads(doctor_out)
    shown = lint["findings"] + plan["problems"] + [p for r in plan["rows"] for p in r["problems"]]
    assert plan["problems"] and any(r["problems"] for r in plan["rows"])
    for finding in shown + doctor["findings"]:
        assert set(finding) == FINDING_KEYS, finding
    for finding_id in {f["id"] for f in shown}:
        _explainable(run_cli, finding_id)
    advice = next(f for f in lint["findings"] if f["id"] == "TQ310")
    fa_id = advice["title"].split(":")[0]  # the catalogue entry the finding names
    assert fa_id == "FA001"
    code, page, _ = run_cli("explain", fa_id)
    assert code == 0 and page.startswith("# FA001: false advice, reported by lint as TQ310")
    assert "`tqdeploy lint -- vllm serve Qwen/Qwen3.6-27B --quantization turboquant`" in page


def test_every_compat_rule_code_is_reported_under_a_documented_id(run_cli):
    import re

    from tqdeploy.checkids import check_for_code
    from tqdeploy.model import compat

    codes = set(re.findall(r'Severity\.[A-Z]+,\s*"([A-Z_]{4,})"', Path(compat.__file__).read_text()))
    assert {"TP_HEADS", "MML_TOO_LONG", "TQ_HYBRID_BUG", "WEIGHTS_DONT_FIT"} <= codes
    for code in sorted(codes | {"held-memory"}):
        found = check_for_code(code)
        assert found is not None, code
        code_page = run_cli("explain", code)[1]
        assert code_page == run_cli("explain", found[0])[1] and code_page.startswith(f"# {found[0]}: ")


def test_fail_on_warn_makes_warnings_fail_as_the_doctors_does(run_cli):
    command = ["--", "vllm", "serve", "m"]  # TQ322 (warn): no --host and no API key
    assert run_cli("lint", *command)[0] == 0
    assert run_cli("lint", "--fail-on", "warn", *command)[0] == 1
    code, _, err = run_cli("lint", "--fail-on", "wran", *command)
    assert code == 2 and err.splitlines() == [
        "tqdeploy: error: --fail-on 'wran' is not one of error, warn",
        "  fix: use warn",
    ]


def test_fix_never_gives_an_option_twice(run_cli):
    # FA001's fix is --kv-cache-dtype turboquant_4bit_nc; the command already sets one: the fix only drops
    # --quantization turboquant, and says which setting stays.
    code, out, _ = run_cli(
        "lint", "--fix", "--", "vllm", "serve", "m", "--quantization", "turboquant", "--kv-cache-dtype", "fp8"
    )
    assert out.strip() == "vllm serve m --kv-cache-dtype fp8 --host 127.0.0.1"
    data = json.loads(
        run_cli(
            "lint", "--json", "--", "vllm", "serve", "m", "--quantization", "turboquant", "--kv-cache-dtype", "fp8"
        )[1]
    )
    advice = next(f for f in data["findings"] if f["id"] == "TQ310")
    assert "the command already sets --kv-cache-dtype fp8: --fix only drops --quantization" in advice["remediation"]
    fixed = run_cli("lint", "--fix", "--", "vllm", "serve", "m", "--quantization", "turboquant")[1]
    assert fixed.strip() == "vllm serve m --kv-cache-dtype turboquant_4bit_nc --host 127.0.0.1"  # none set: the fix


def test_python_dash_c_is_linted_as_the_snippet_it_runs(run_cli, tmp_path):
    code_text = 'from vllm import LLM; llm = LLM("m", max_modle_len=4096)'
    code, out, err = run_cli("lint", "--json", "--", "python3", "-c", code_text)
    found = json.loads(out)["findings"]
    assert code == 1 and [f["id"] for f in found] == ["TQ315"], err
    assert "did you mean max_model_len?" in found[0]["title"]
    script = tmp_path / "x.py"
    script.write_text(code_text + "\n")
    assert json.loads(run_cli("lint", "--json", "--file", str(script))[1])["findings"] == found  # as --file reads it
    code, _, err = run_cli("lint", "--", "python3", "-c", "print(1)")
    assert code == 2 and "no LLM(...), EngineArgs(...) or AsyncEngineArgs(...) call in the -c code" in err
    assert run_cli("lint", "--", "python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m")[0] in (0, 1)


def test_python_keyword_values_are_checked_against_the_flags_choices(run_cli):
    # LLM's keywords are EngineArgs' fields, the same ones --kv-cache-dtype and --dtype fill
    bad = 'from vllm import LLM; LLM("m", kv_cache_dtype="turboquant_4bit", dtype="bfloat16")'
    code, out, err = run_cli("lint", "--json", "--", "python3", "-c", bad)
    found = json.loads(out)["findings"]
    assert code == 1 and [f["id"] for f in found] == ["TQ302"], err
    assert found[0]["evidence"] == {"flag": "line 1 kv_cache_dtype="}
    assert "turboquant_4bit_nc" in found[0]["remediation"]
    good = 'from vllm import LLM; LLM("m", kv_cache_dtype="turboquant_4bit_nc", dtype=some_variable)'
    code, out, err = run_cli("lint", "--json", "--", "python3", "-c", good)
    assert code == 0 and json.loads(out)["findings"] == [], err
