"""The answers check per KV dtype on the lent H200 (2026-12-05, vLLM 0.25.0, the real demo model, eager, 0.3 of the
GPU each), as recorded by scripts/gpu/tools/answers.sh in tests/fixtures/gpu-runs/h200-vllm-0.25.0/answers-2026-12-05/
(docs/answers.md, "On the H200"): answers.sh's own table phase over the records, and the planner against the KV
sizes those starts logged."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tqdeploy.model import facts_from_config
from tqdeploy.plan.allocator import kv_capacity
from tqdeploy.plan.vllmlog import calibrate, parse_kv_log
from tqdeploy.units import GiB

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "tests" / "fixtures" / "gpu-runs" / "h200-vllm-0.25.0" / "answers-2026-12-05"
# SmolLM2-135M-Instruct as `tqdeploy demo-model` writes its config.json (demomodel/convert.py): 30 layers, 3 KV heads
SMOLLM2 = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "max_position_embeddings": 8192,
    "vocab_size": 49152,
    "torch_dtype": "bfloat16",
}


def _table(tmp_path: Path) -> dict[str, list[str]]:
    work = tmp_path / "work"
    shutil.copytree(RUN, work)
    res = subprocess.run(
        ["bash", str(REPO / "scripts" / "gpu" / "tools" / "answers.sh"), str(tmp_path / "out"), "table"],
        env={"PATH": "/usr/bin:/bin", "TQ_ANSWERS_WORK": str(work)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    rows = (tmp_path / "out" / "table.md").read_text().splitlines()[2:]
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in row.strip("|").split("|")] for row in rows)}


def test_the_recorded_h200_checks_read_as_the_table_says(tmp_path):
    table = _table(tmp_path)
    assert sorted(table) == ["auto", "fp8", "turboquant_k8v4"]
    dtype, prefix, ppl, ratio, verdict, bad = range(6)
    auto, fp8, tq = table["auto"], table["fp8"], table["turboquant_k8v4"]
    assert (auto[verdict], auto[ratio], auto[bad]) == ("pass", "1.000", "-")
    # fp8: perplexity +0.3%, but one greedy answer ("the capital of France") turned into a loop: the check fails
    assert fp8[verdict] == "fail" and fp8[ratio] == "1.003" and "TQ482 error" in fp8[bad]
    # turboquant_k8v4 passes; with prefix caching on, the long prompt asked again changed (TQ481, a warning)
    assert (tq[dtype], tq[prefix], tq[verdict], tq[ratio]) == ("turboquant_k8v4", "True", "pass", "0.999")
    assert tq[bad] == "TQ481 warn"


@pytest.mark.parametrize("name,dtype", [("auto", "auto"), ("fp8", "fp8"), ("turboquant_k8v4", "turboquant_k8v4")])
def test_the_planner_gives_the_kv_tokens_these_h200_starts_logged(name, dtype):
    """The same 41.1 GiB holds 1,917,136 bf16 tokens, 3,831,376 fp8 and 4,062,816 turboquant_k8v4 (2.119x): the
    planner's bytes per token, within the rounding of the logged GiB, for the block size the start logged."""
    text = (RUN / f"server-{name}.log").read_text()
    logged = parse_kv_log(text)

    def planned(gib: float) -> int:
        facts = facts_from_config(SMOLLM2)
        return kv_capacity(
            facts, dtype, round(gib * GiB), logged.max_model_len, platform="cuda", block_size=logged.block_size
        ).tokens

    assert planned(logged.kv_memory_gib - 0.005) <= logged.kv_tokens <= planned(logged.kv_memory_gib + 0.005)


def test_vllm_0_25_chose_a_smaller_turboquant_block_than_the_planner_default():
    """vLLM 0.25.0 logged "Setting attention block size to 32 tokens" for turboquant_k8v4 here; the planner's default
    (0.32.0's rules: 48) plans 0.77% fewer tokens than this start had. docs/answers.md keeps the figure."""
    cal = calibrate(facts_from_config(SMOLLM2), (RUN / "server-turboquant_k8v4.log").read_text())
    assert cal.logged.block_size == 32 and cal.block_size == 48
    assert -0.01 < cal.error < -0.005
