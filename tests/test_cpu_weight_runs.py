"""Replay the recorded cold starts of a 7.3 GB model on the CPU machine (tests/fixtures/cpu-runs/wide-weights/):
the weights phase against the disk's O_DIRECT rate, with vLLM's default loader and with runai_streamer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tqdeploy.profile.accelerators import weight_load_finding
from tqdeploy.profile.timeline import build_timeline

RUNS = Path(__file__).parent / "fixtures" / "cpu-runs" / "wide-weights"
BYTES = 7_301_050_368


def _run(case: str) -> tuple[dict, str]:
    return json.loads((RUNS / case / "profile.json").read_text()), (RUNS / case / "server.log").read_text()


@pytest.mark.parametrize("case", ["default", "runai_streamer"])
def test_recorded_cold_start_measured_the_disk_and_a_cold_cache(case):
    profile, _ = _run(case)
    w = profile["weights"]
    assert (
        w["bytes"] == BYTES and w["page_cache_resident_fraction"] == 0.0 and w["page_cache_measured"] == "before start"
    )
    assert w["disk_fs_type"] == "ext4" and 0.5 < w["disk_read_gb_per_s"] < 3
    assert w["vs_disk"] == pytest.approx(w["gb_per_s"] / w["disk_read_gb_per_s"], rel=0.01)
    assert profile["attributed_fraction"] >= 0.95


@pytest.mark.parametrize("case", ["default", "runai_streamer"])
def test_the_log_alone_gives_the_same_weights_phase(case):
    profile, log = _run(case)
    t = build_timeline(log, weight_bytes=BYTES)
    assert t.weights["seconds"] == pytest.approx(profile["weights"]["seconds"], abs=0.01)
    assert t.weights["gb_per_s"] == pytest.approx(profile["weights"]["gb_per_s"], abs=0.001)


def test_runai_streamer_shortened_a_load_that_the_disk_did_not_limit():
    default, _ = _run("default")
    runai, log = _run("runai_streamer")
    assert "Loading safetensors using Runai Model Streamer: 100% Completed" in log
    assert "Loading weights took" not in log  # vLLM times only its default loader: the stamps time this one
    assert runai["weights"]["seconds"] < 0.8 * default["weights"]["seconds"]  # 16.3 s vs 22.9 s
    for profile in (default, runai):
        finding = weight_load_finding(profile["weights"])
        assert finding is not None and finding.id == "TQ436" and finding.severity.value == "info"
        assert "not the bottleneck" in finding.title and "runai_streamer" in finding.remediation
