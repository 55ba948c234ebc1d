"""Replays the real H200 runs of `tqdeploy up / status / down / profile` (vLLM 0.25.0) recorded in
tests/fixtures/gpu-runs/h200-vllm-0.25.0/ (its README says how): what the tool concluded on the GPU host
must follow again from what the host printed, on a machine without a GPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES

RUNS = FIXTURES / "gpu-runs" / "h200-vllm-0.25.0"
DENSE8 = str(RUNS / "dense8")
STARTS = ["bf16-cold", "bf16-warm", "tq-cold", "tq-warm", "bf16-cold-2", "tq-cold-2"]
# KV bytes per token of dense8: 8 layers x 2 KV heads x 128 x 2 (K and V) x 2 bytes; TurboQuant 4bit_nc keeps
# the first and last two layers at bf16 and packs the other four to 134 B per head (FIXTURES README).
BF16_B_PER_TOKEN = 8192
TQ_B_PER_TOKEN = 5168


def _json(case: str, name: str) -> dict:
    return json.loads((RUNS / case / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def timelines(tmp_path_factory) -> dict[str, dict]:
    from tqdeploy.cli import main

    out: dict[str, dict] = {}
    for case in STARTS:
        target = tmp_path_factory.mktemp(case)
        code = main(
            ["profile", "--log", str(RUNS / case / "server.log"), "--model", DENSE8, "--no-chart", "--out", str(target)]
        )
        assert code == 0
        out[case] = json.loads((target / "profile.json").read_text(encoding="utf-8"))
    return out


@pytest.mark.parametrize("case", STARTS)
def test_the_recorded_start_became_ready_and_down_left_nothing(case):
    up, status, down = _json(case, "up.json"), _json(case, "status.json"), _json(case, "down.json")
    assert up["schema"] == "tqdeploy.up/1" and up["status"] == "ready"
    assert not [f for f in up["findings"] if f["severity"] == "error"]
    assert status["schema"] == "tqdeploy.status/1" and status["ready"] and status["phase"] == "ready"
    assert any(p["title"].startswith("VLLM::EngineCore") for p in status["processes"])
    # The KV cache took most of the GPU while ready; after down its memory was back (NVML, MiB).
    assert status["gpus"][0]["used_mib"] > 100_000
    assert down["status"] == "stopped" and down["left"] == [] and down["port_free"]
    assert down["gpus"][0]["used_mib"] <= int((RUNS / case / "gpu-mem-before.txt").read_text()) + 1024


@pytest.mark.parametrize("case", STARTS)
def test_the_timeline_of_a_real_gpu_start_is_attributed(timelines, case):
    profile = timelines[case]
    assert profile["attributed_fraction"] >= 0.95
    names = {p["name"] for p in profile["phases"]}
    assert {"weights loaded", "torch.compile", "CUDA graph capture", "KV cache allocation"} <= names
    assert all(p["source"] == "stamp" for p in profile["phases"])  # up stamped every line as it read it


@pytest.mark.parametrize("case", STARTS)
def test_real_kv_capacity_matches_the_plan(timelines, case):
    kv = timelines[case]["kv"]
    assert kv["planned_tokens"] and kv["real_tokens"]
    assert abs(kv["real_tokens"] - kv["planned_tokens"]) / kv["planned_tokens"] < 0.01
    expected = TQ_B_PER_TOKEN if case.startswith("tq") else BF16_B_PER_TOKEN
    assert kv["bytes_per_token_real"] == pytest.approx(expected, rel=0.001)
    assert not [f for f in timelines[case]["findings"] if f["severity"] in ("error", "warn")]


def test_turboquant_cold_start_spends_its_time_in_graph_capture_and_autotune(timelines):
    def seconds(case: str, phase: str) -> float:
        return sum(p["seconds"] for p in timelines[case]["phases"] if p["name"] == phase)

    assert seconds("tq-cold", "CUDA graph capture") > 10 * seconds("bf16-cold", "CUDA graph capture")
    # A warm start keeps the compile cache: torch.compile falls to a fraction of the cold figure.
    for dtype in ("bf16", "tq"):
        assert seconds(f"{dtype}-warm", "torch.compile") < 0.5 * seconds(f"{dtype}-cold", "torch.compile")
        assert timelines[f"{dtype}-warm"]["wall_seconds"] < 0.5 * timelines[f"{dtype}-cold"]["wall_seconds"]


def test_kv_too_small_on_the_gpu_is_classified_with_vllms_own_estimate():
    from tqdeploy.runtime.classify import StartContext, classify_exit
    from tqdeploy.runtime.logstamp import split

    lines = [split(line)[1] for line in (RUNS / "kvsmall-cold" / "server.log").read_text().splitlines()]
    up = _json("kvsmall-cold", "up.json")
    recorded = [f for f in up["findings"] if f["severity"] == "error"]
    assert [f["id"] for f in recorded] == ["TQ402"]
    finding = classify_exit(lines, 1, StartContext(build_dir="/b", max_model_len=32768))
    assert finding.id == "TQ402" and "12192" in finding.remediation
    assert _json("kvsmall-cold", "down.json")["left"] == []


@pytest.mark.parametrize("case", ["bf16-warm-load", "tq-warm-load"])
def test_the_bounded_load_on_the_gpu_was_sampled(case):
    profile = _json(case, "profile-load.json")
    load = profile["load"]
    assert [s["concurrency"] for s in load["steps"]] == [1, 8, 32]
    assert all(s["completed"] == s["requests"] == 48 and s["errors"] == 0 for s in load["steps"])
    # Throughput grows with concurrency on the H200 (about 480, 2700 and 5700 output tokens/s here).
    rates = [s["output_tokens_per_s"] for s in load["steps"]]
    assert rates == sorted(rates) and rates[-1] > 5 * rates[0]
    # The 8- and 32-way steps lasted about 1 s and 0.5 s there, so a 1 s scrape interval can miss them:
    # KV usage above zero was still sampled in both runs.
    assert load["server"]["kv_usage_max"] > 0 and max(s["kv_usage"] for s in load["samples"]) > 0
    assert profile["kv"]["cache_dtype"] == ("turboquant_4bit_nc" if case.startswith("tq") else "auto")
