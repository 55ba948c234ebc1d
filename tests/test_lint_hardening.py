"""lint's edits, redaction and Python snippets: the pieces the hostile suite (tests/hostile/) relies on."""

from __future__ import annotations

import json
import random

import pytest

from tqdeploy.findings import Edit
from tqdeploy.lint.report import apply_edits
from tqdeploy.lint.secrets import LintRedactor

KEY = "sk-hardening-0123456789abcdef"


def _apply_edits_quadratic(argv, edits):
    """The previous apply_edits (right to left, a list splice per edit): the reference semantics."""
    out = list(argv)
    taken = []
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        if any(e.start < t_end and t_start < e.end for t_start, t_end in taken) or any(
            e.start == e.end and t_start < e.start < t_end for t_start, t_end in taken
        ):
            continue
        out[e.start : e.end] = list(e.tokens)
        taken.append((e.start, max(e.end, e.start)))
    return out


def test_linear_apply_edits_gives_what_the_quadratic_one_gave():
    rng = random.Random(14)
    for _ in range(3000):
        n = rng.randint(0, 12)
        argv = [f"a{i}" for i in range(n)]
        edits = []
        for k in range(rng.randint(0, 6)):
            start = rng.randint(0, n)
            end = start if rng.random() < 0.3 else rng.randint(start, n)
            edits.append(Edit(start, end, tuple(f"e{k}.{j}" for j in range(rng.randint(0, 2)))))
        assert apply_edits(argv, edits) == _apply_edits_quadratic(argv, edits), (argv, edits)


@pytest.mark.parametrize(
    "argv",
    [
        ["--api-key", KEY],
        ["--api_key", KEY],
        ["--api-key=" + KEY],
        ["--api_key=" + KEY],
        ["--api-k", KEY],
        ["--api-k=" + KEY],
        ["--ap", KEY],
        ["--api-keys", KEY],
        ["--API-KEY", KEY],
        ["--api-key", "other-key", KEY],
        ["--hf-token", KEY],
        ["--hf_t=" + KEY],
        ["--served-model-name", "hf_abcdefghijklmnop0123"],
        ["HF_TOKEN=" + KEY],
    ],
)
def test_every_spelling_vllms_parser_accepts_is_redacted(argv):
    """vLLM's FlexibleArgumentParser maps _ to -, takes --opt=value, and (no allow_abbrev set) unambiguous
    prefixes (vllm/utils/argparse_utils.py); --api-keys and --API-KEY are refused by it, redacted all the same."""
    shown = " ".join(LintRedactor().argv(["vllm", "serve", "m", *argv, "--port", "8000"]))
    assert KEY not in shown and "hf_abcdefghijklmnop0123" not in shown and "[secret-1]" in shown
    assert shown.endswith("--port 8000")  # the next option is not taken for a value


def test_a_shell_reference_is_not_a_secret_and_hosts_stay():
    redactor = LintRedactor()
    argv = ["vllm", "serve", "m", "--api-key", "$VLLM_API_KEY", "--host", "10.1.2.3", "--hf-token", "${HF_TOKEN}"]
    assert redactor.argv(argv) == argv


def test_explain_json_is_the_page(run_cli):
    code, out, err = run_cli("explain", "tq101", "--json")
    page = json.loads(out)
    assert code == 0 and set(page) == {"schema", "id", "title", "markdown"} and page["id"] == "TQ101"
    assert page["markdown"] == run_cli("explain", "TQ101")[1]


def test_a_valid_snippet_passes_and_a_typo_gets_a_did_you_mean(run_cli, tmp_path):
    good = tmp_path / "good.py"
    good.write_text(
        "from vllm import LLM\nfrom vllm.engine.arg_utils import AsyncEngineArgs\n"
        'llm = LLM("Qwen/Qwen3-8B", tensor_parallel_size=2, kv_cache_dtype="turboquant_4bit_nc", **extra)\n'
        'args = AsyncEngineArgs(model="m", enable_log_requests=True, max_num_seqs=8)\n'
    )
    code, out, err = run_cli("lint", "--json", "--file", str(good))
    assert code == 0 and json.loads(out)["findings"] == [], out + err
    bad = tmp_path / "bad.py"
    bad.write_text('import vllm\nllm = vllm.LLM("m", "tok", max_modle_len=4096)\ne = vllm.EngineArgs(port=1)\n')
    code, out, err = run_cli("lint", "--json", "--file", str(bad))
    messages = [f["title"] for f in json.loads(out)["findings"]]
    assert code == 1
    assert any("'max_modle_len'; did you mean max_model_len?" in m for m in messages), messages
    assert any("EngineArgs() of vLLM 0.32.0 takes no keyword argument 'port'" in m for m in messages)
    assert any("takes 1 positional argument(s) (model), 2 given" in m for m in messages)


def test_a_snippets_literal_values_feed_the_doctors_checkpoint_checks(run_cli, tmp_path):
    from pathlib import Path

    snippet = tmp_path / "x.py"
    snippet.write_text('from vllm import LLM\nLLM(model="m", tensor_parallel_size=3)\n')  # 3 does not divide 8 KV heads
    hosts = Path(__file__).parent / "fixtures" / "hosts" / "h200-1gpu.json"
    model = Path(__file__).parent / "fixtures" / "models" / "qwen3-8b"
    code, out, _ = run_cli("doctor", "--json", "--snapshot", str(hosts), "--model", str(model), "--file", str(snippet))
    doc = json.loads(out)
    assert doc["options"]["tensor_parallel_size"] == 3
    assert any(f["id"] == "TQ203" and f["severity"] == "error" for f in doc["findings"])
