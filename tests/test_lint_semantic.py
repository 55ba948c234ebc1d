"""Model- and host-aware rules (TQ340-TQ342), wired to tqdeploy.model.compat."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tqdeploy.lint import lint_command
from tqdeploy.model import load_model_facts
from tqdeploy.snapshot import GPU, HostSnapshot

MODEL_DIR = Path(__file__).resolve().parent / "fixtures" / "lint" / "qwen3.6-27b"
SAFE = "--host 127.0.0.1"


@pytest.fixture(scope="module")
def qwen36():
    return load_model_facts(str(MODEL_DIR))


def lint(cmd, **kw):
    return lint_command(shlex.split(cmd), live=False, **kw)


def by_id(report, rule):
    return [f for f in report.findings if f.id == rule]


def test_tensor_parallel_both_directions(qwen36):
    bad = lint(f"vllm serve Qwen/Qwen3.6-27B -tp 3 {SAFE}", model=qwen36)
    assert [f.severity.value for f in by_id(bad, "TQ340")] == ["error"] and bad.errors
    assert "{1, 2, 4, 8}" in by_id(bad, "TQ340")[0].remediation
    for tp in (1, 2, 4):
        assert lint(f"vllm serve Qwen/Qwen3.6-27B -tp {tp} {SAFE}", model=qwen36).findings == []
    replicated = lint(f"vllm serve Qwen/Qwen3.6-27B -tp 8 {SAFE}", model=qwen36)
    assert [f.severity.value for f in by_id(replicated, "TQ340")] == ["info"] and not replicated.errors


def test_max_model_len_both_directions(qwen36):
    bad = lint(f"vllm serve Qwen/Qwen3.6-27B --max-model-len 300k {SAFE}", model=qwen36)
    assert by_id(bad, "TQ341") and bad.errors
    for good in ("262144", "131072", "128k"):
        assert lint(f"vllm serve Qwen/Qwen3.6-27B --max-model-len {good} {SAFE}", model=qwen36).findings == []


def test_turboquant_compute_capability(qwen36):
    cmd = f"vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_4bit_nc {SAFE}"
    volta = HostSnapshot(gpus=[GPU(index=0, name="Tesla V100", compute_capability=[7, 0])])
    bad = lint(cmd, model=qwen36, host=volta)
    assert any("compute capability" in f.title for f in by_id(bad, "TQ342") if f.severity.value == "error")
    h200 = lint(
        cmd, model=qwen36, host=HostSnapshot(gpus=[GPU(index=0, name="NVIDIA H200", compute_capability=[9, 0])])
    )
    assert not h200.errors


def test_turboquant_hybrid_bug_depends_on_version(qwen36):
    cmd = f"vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_4bit_nc {SAFE}"
    old = lint(cmd, model=qwen36, vllm_version="0.25.0")
    assert any(f.severity.value == "error" and "50709" in f.title for f in by_id(old, "TQ342"))
    new = lint(cmd, model=qwen36, vllm_version="0.32.0")
    assert not new.errors


def test_no_model_no_model_rules():
    r = lint(f"vllm serve Qwen/Qwen3.6-27B -tp 3 {SAFE}")
    assert r.findings == []


def test_cli_with_model_and_gpu(run_cli):
    code, out, _ = run_cli(
        "lint",
        "--json",
        "--model",
        str(MODEL_DIR),
        "--gpu",
        "H200",
        "--",
        "vllm",
        "serve",
        "Qwen/Qwen3.6-27B",
        "-tp",
        "3",
        "--host",
        "127.0.0.1",
    )
    assert code == 1
    assert "TQ340" in {f["id"] for f in json.loads(out)["findings"]}


def test_cli_with_snapshot(run_cli, tmp_path):
    snap = HostSnapshot(gpus=[GPU(index=0, name="Tesla V100", compute_capability=[7, 0])])
    path = tmp_path / "host.json"
    snap.save(path)
    code, out, _ = run_cli(
        "lint",
        "--json",
        "--model",
        str(MODEL_DIR),
        "--snapshot",
        str(path),
        "--",
        "vllm",
        "serve",
        "m",
        "--kv-cache-dtype",
        "turboquant_k8v4",
        "--host",
        "127.0.0.1",
    )
    assert code == 1
    assert any(f["id"] == "TQ342" and f["severity"] == "error" for f in json.loads(out)["findings"])


def test_weights_fit_both_directions(qwen36):
    small = HostSnapshot(
        gpus=[GPU(index=i, name="24 GiB GPU", memory_total=24 << 30, compute_capability=[8, 9]) for i in range(4)]
    )
    bad = lint(f"vllm serve Qwen/Qwen3.6-27B -tp 1 {SAFE}", model=qwen36, host=small)
    f = by_id(bad, "TQ343")
    assert f and f[0].severity.value == "error" and "--tensor-parallel-size" in f[0].remediation
    good = lint(
        f"vllm serve Qwen/Qwen3.6-27B -tp 1 {SAFE}",
        model=qwen36,
        host=HostSnapshot(
            gpus=[GPU(index=0, name="NVIDIA H200", memory_total=150754820096, compute_capability=[9, 0])]
        ),
    )
    assert not by_id(good, "TQ343")


def test_turboquant_model_dtype_follows_the_dtype_flag(qwen36):
    tq = f"vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_4bit_nc {SAFE}"
    bad = lint(tq + " --dtype float32", model=qwen36, vllm_version="0.32.0")
    assert [f.title for f in by_id(bad, "TQ342") if f.severity.value == "error"] == [
        "--dtype float32: TurboQuant attention runs float16/bfloat16 models only"
    ]
    for ok in ("", " --dtype auto", " --dtype bfloat16", " --dtype half"):
        assert not [f for f in by_id(lint(tq + ok, model=qwen36), "TQ342") if f.severity.value == "error"]
