"""Hostile inputs to lint, doctor and explain: one case per input.

Same contract as test_hostile_inputs.py (whose Case, check_outcome and run_subprocess this reuses):
exit 2 with a one-line error naming the input, or findings; no traceback, no seeded secret in any
stream or file, nothing half-written, bounded time and memory. The secret matrix runs every spelling
vLLM's parser accepts for its secret options (and token-shaped values) through every output mode.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hostile.seeds import HF_SECRET, SECRET, SECRETS, secrets_in_files
from hostile.test_hostile_inputs import IN_PROCESS_LIMIT_S, Case, check_outcome, run_subprocess

TESTS = Path(__file__).resolve().parent.parent
H200 = str(TESTS / "fixtures" / "hosts" / "h200-1gpu.json")
QWEN3 = str(TESTS / "fixtures" / "models" / "qwen3-8b")

# ---------------------------------------------------------------- leaks a secret: spelling x output mode

SPELLINGS = {
    "api-key": f"--api-key {SECRET}",
    "api-key-two-values": f"--api-key {SECRET} {SECRET}-second",
    "api_key-underscore": f"--api_key {SECRET}",
    "api-key-equals": f"--api-key={SECRET}",
    "api_k-prefix-equals": f"--api_k={SECRET}",
    "api-k-prefix": f"--api-k {SECRET}",
    "ap-ambiguous-prefix": f"--ap {SECRET}",
    "api-keys-plural": f"--api-keys {SECRET}",
    "api-kye-misspelt": f"--api-kye {SECRET}",
    "hf-token": f"--hf-token {HF_SECRET}",
    "hf_t-prefix-equals": f"--hf_t={HF_SECRET}",
    "served-model-name-token": f"--served-model-name {HF_SECRET}",
    "env-prefix": f"HF_TOKEN={HF_SECRET} VLLM_API_KEY={SECRET}",
    "docker-env": f"-e HF_TOKEN={HF_SECRET} -e VLLM_API_KEY={SECRET}",
}
MODES = {
    "text": ["lint", "--no-live", "--file"],
    "json": ["lint", "--no-live", "--json", "--file"],
    "fix": ["lint", "--no-live", "--fix", "--file"],
    "fix-json": ["lint", "--no-live", "--fix", "--json", "--file"],
    "doctor-file": ["doctor", "--snapshot", H200, "--file"],
    "doctor-file-json": ["doctor", "--snapshot", H200, "--json", "--file"],
}


def _script(tmp: Path, spelling: str) -> Path:
    args = SPELLINGS[spelling]
    if spelling == "env-prefix":
        line = f"{args} vllm serve Qwen/Qwen3-8B --host 127.0.0.1"
    elif spelling == "docker-env":
        line = f"docker run --gpus all {args} vllm/vllm-openai:v0.32.0 Qwen/Qwen3-8B"
    else:
        line = f"vllm serve Qwen/Qwen3-8B --host 127.0.0.1 {args}"
    script = tmp / "serve.sh"
    script.write_text(f"#!/bin/sh\n{line}\n")
    return script


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_no_secret_spelling_is_printed_in_any_mode(run_cli, tmp_path, monkeypatch, spelling, mode):
    monkeypatch.chdir(tmp_path)
    script = _script(tmp_path, spelling)
    code, out, err = run_cli(*MODES[mode], str(script))
    assert code in (0, 1), err
    assert "Traceback" not in out + err and "internal error" not in err
    for secret in SECRETS:
        assert secret not in out + err, f"{spelling} leaked in {mode}: {out[-800:]}{err[-400:]}"
    if not mode.startswith("fix"):  # --fix may move a secret out of the command (-e VAR passes it through)
        assert "[secret-" in out  # redacted, not dropped: the reader sees where the secret was
    if mode.endswith("json") and mode != "fix-json":
        json.loads(out)
    assert secrets_in_files(tmp_path, {script}) == []


@pytest.mark.parametrize("extra", [[], ["--json"], ["--fix"]])
def test_a_secret_inside_sh_c_is_redacted(run_cli, extra):
    command = f"vllm serve Qwen/Qwen3-8B --api_key {SECRET} --served-model-name {HF_SECRET}"
    code, out, err = run_cli("lint", "--no-live", *extra, "--", "sh", "-c", command)
    assert code in (0, 1) and "Traceback" not in err
    assert SECRET not in out + err and HF_SECRET not in out + err and "[secret-" in out


def test_a_python_snippets_secrets_are_redacted(run_cli, tmp_path):
    snippet = tmp_path / "x.py"
    snippet.write_text(f'from vllm import LLM\nllm = LLM(model="m", hf_token="{HF_SECRET}", api_kye="{SECRET}")\n')
    for extra in ([], ["--json"]):
        code, out, err = run_cli("lint", *extra, "--file", str(snippet))
        assert code == 1 and "api_kye" in out and "Traceback" not in err
        assert HF_SECRET not in out + err and SECRET not in out + err


# ---------------------------------------------------------------- hangs, grows without bound, is slow


def lint_dev_zero(tmp: Path) -> Case:
    return Case(["lint", "--file", "/dev/zero"], needle="/dev/zero: not a regular file", subprocess=True)


def lint_fifo(tmp: Path) -> Case:
    os.mkfifo(tmp / "serve.sh")
    return Case(["lint", "--file", str(tmp / "serve.sh")], needle="serve.sh: not a regular file", subprocess=True)


def doctor_file_fifo(tmp: Path) -> Case:
    os.mkfifo(tmp / "serve.sh")
    argv = ["doctor", "--snapshot", H200, "--file", str(tmp / "serve.sh")]
    return Case(argv, needle="serve.sh: not a regular file", subprocess=True)


def lint_a_folder(tmp: Path) -> Case:
    return Case(["lint", "--file", str(tmp)], needle="not a regular file")


def lint_2mib_script(tmp: Path) -> Case:
    script = tmp / "big.sh"
    script.write_text("vllm serve m\n" + "# filler\n" * 240_000)
    return Case(["lint", "--file", str(script)], needle="big.sh: larger than 1 MiB")


def lint_binary_script(tmp: Path) -> Case:
    (tmp / "bin.sh").write_bytes(b"vllm serve m \xff\xfe\n")
    return Case(["lint", "--file", str(tmp / "bin.sh")], needle="bin.sh: not UTF-8 text")


def _continued(lines: list[str]) -> str:
    return "#!/bin/sh\nvllm serve m \\\n" + " \\\n".join(lines) + "\n"


def lint_1mb_script_of_repeated_flags(tmp: Path) -> Case:
    """40,000 continuation lines, half of them a repeated flag (an edit each): the quadratic apply_edits
    took over 60 s on this; linear, about 5 s here on 2 shared cores. The bound is SUBPROCESS_LIMIT_S."""
    lines = [f"  --max-num-seqs {i}" if i % 2 else "  --enforce_eager" for i in range(50_000)]
    text = _continued(lines)[:1_000_000].rsplit("\\\n", 1)[0] + "\n"
    (tmp / "big.sh").write_text(text)
    return Case(["lint", "--no-live", "--json", "--file", str(tmp / "big.sh")], code=0, subprocess=True)


def lint_1mb_script_of_unknown_flags(tmp: Path) -> Case:
    """40,000 distinct unknown options: each did-you-mean costs ~5 ms, so only the first 100 get one."""
    lines = [f"  --bogus-flag-{i} x" for i in range(45_000)]
    text = _continued(lines)[:1_000_000].rsplit("\\\n", 1)[0] + "\n"
    (tmp / "big.sh").write_text(text)
    return Case(["lint", "--no-live", "--json", "--file", str(tmp / "big.sh")], code=1, subprocess=True)


def lint_python_nested_too_deeply(tmp: Path) -> Case:
    (tmp / "x.py").write_text("LLM(model=" + "[" * 100_000 + "]" * 100_000 + ")\n")
    return Case(["lint", "--file", str(tmp / "x.py")], needle="x.py line 1: not valid Python", subprocess=True)


def lint_python_syntax_error(tmp: Path) -> Case:
    (tmp / "x.py").write_text("llm = LLM(model='m',\n")
    return Case(["lint", "--file", str(tmp / "x.py")], needle="x.py line 1: not valid Python")


def lint_python_without_a_call(tmp: Path) -> Case:
    (tmp / "x.py").write_text("import vllm\nprint(vllm.__version__)\n")
    return Case(["lint", "--file", str(tmp / "x.py")], needle="no LLM(...), EngineArgs(...)")


# ---------------------------------------------------------------- doctor and explain


def doctor_text_only_config(tmp: Path) -> Case:
    """A config that is not a decoder LLM (BERT) is one TQ201 error; the host checks still run."""
    folder = tmp / "bert"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert", "hidden_size": 64}')
    return Case(["doctor", "--snapshot", H200, "--model", str(folder), "--json"], code=1)


def doctor_config_without_architectures(tmp: Path) -> Case:
    folder = tmp / "noarch"
    folder.mkdir()
    (folder / "config.json").write_text('{"num_hidden_layers": 2}')
    return Case(["doctor", "--snapshot", H200, "--model", str(folder), "--json"], code=1)


def doctor_snapshot_out_over_an_existing_file(tmp: Path) -> Case:
    mine = tmp / "notes.json"
    mine.write_text('{"mine": true}\n')

    def after() -> None:
        assert mine.read_text() == '{"mine": true}\n'

    argv = ["doctor", "--snapshot", H200, "--snapshot-out", str(mine)]
    return Case(argv, needle="notes.json already exists", after=after)


def doctor_snapshot_out_force_replaces_atomically(tmp: Path) -> Case:
    mine = tmp / "old.json"
    mine.write_text("{}\n")

    def after() -> None:
        assert json.loads(mine.read_text())["schema"] == "tqdeploy.snapshot/1"

    return Case(["doctor", "--snapshot", H200, "--snapshot-out", str(mine), "--force"], code=0, after=after)


def doctor_snapshot_out_a_folder(tmp: Path) -> Case:
    return Case(["doctor", "--snapshot", H200, "--snapshot-out", str(tmp), "--force"], needle="not a regular file")


def explain_json(tmp: Path) -> Case:
    return Case(["explain", "--json", "TQ321"], code=0)


def explain_a_path(tmp: Path) -> Case:
    return Case(["explain", "../../README"], needle="no check named '../../README'")


def explain_json_unknown(tmp: Path) -> Case:
    return Case(["explain", "--json", "TQ999"], needle="no check named 'TQ999'")


CASES = {
    name: fn
    for name, fn in globals().items()
    if callable(fn) and getattr(fn, "__module__", "") == __name__ and not name.startswith(("_", "test_"))
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_lint_doctor_input(name, tmp_path, run_cli, monkeypatch):
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    case = CASES[name](tmp_path)
    started = time.monotonic()
    if case.subprocess:
        code, out, err = run_subprocess(case, tmp_path)
    else:
        monkeypatch.chdir(case.chdir or tmp_path)
        code, out, err = run_cli(*case.argv)
        assert time.monotonic() - started < IN_PROCESS_LIMIT_S, f"{name} took {time.monotonic() - started:.1f} s"
    check_outcome(case, tmp_path, code, out, err)
    if name.startswith("doctor_") and "config" in name:
        findings = json.loads(out)["findings"]
        tq201 = [f for f in findings if f["id"] == "TQ201"]
        assert len(tq201) == 1 and tq201[0]["severity"] == "error", tq201
        assert "not a decoder language-model config" in tq201[0]["title"] or "lacks" in tq201[0]["title"]
        assert any(f["id"] == "TQ101" for f in findings)  # the host checks ran
    if name == "explain_json":
        page = json.loads(out)
        assert page["schema"] == "tqdeploy.explain/1" and page["id"] == "TQ321"
        assert page["markdown"].startswith("# TQ321: ") and page["title"] == "TurboQuant with speculative decoding"
