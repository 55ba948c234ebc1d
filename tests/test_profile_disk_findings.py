"""Weights against the disk (TQ436), the startup plan's state and TQ437, on recorded logs and measured figures.

The startup-plan lines below are vLLM 0.32.0's own format strings (vllm/v1/worker/startup_plan.py and
v1/worker/gpu_worker.py, read in the CPU venv) with concrete values; they are inserted into a real H200 log
recorded with vLLM 0.25.0 (tests/fixtures/gpu-runs/h200-vllm-0.25.0), whose own lines are kept as recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tqdeploy.profile.accelerators import disk_figures, startup_plan_finding, weight_load_finding
from tqdeploy.profile.lifecycle import compare
from tqdeploy.profile.report import ProfileResult, weights_line
from tqdeploy.profile.timeline import build_timeline
from tqdeploy.units import GiB

FIXTURES = Path(__file__).parent / "fixtures"
RUNS = FIXTURES / "gpu-runs" / "h200-vllm-0.25.0"
CPU_LOGS = FIXTURES / "vllm-logs" / "cpu-vllm-0.32.0"
FP = "3f9c0a51d2e4b8c7"
APPLIED = (
    f"Applying persisted startup plan (fingerprint {FP}): kv_cache_memory_bytes=134251732992 (125.03 GiB), "
    "recorded free-memory baseline 139.10 GiB, current 139.12 GiB. Memory profiling will be skipped."
)
RESERVED = (
    "Initial free memory 139.12 GiB, reserved 125.03 GiB memory for KV Cache as specified by kv_cache_memory_bytes "
    "config and skipped memory profiling. This does not respect the gpu_memory_utilization config."
)
NOT_APPLIED = (
    "Startup plan not applied: current free memory (130.00 GiB) is below the recorded baseline (139.10 GiB); "
    "falling back to full memory profiling."
)
SAVED = f"Saved startup plan to /tmp/tq-gpu/bf16/.tqdeploy/cache/vllm/startup_plan/startup_plan_{FP}.json"


def _log(run: str) -> list[str]:
    return (RUNS / run / "server.log").read_text().splitlines()


def _insert_after(lines: list[str], needle: str, message: str, replace: bool = False) -> list[str]:
    """A line in the recorded line's own prefix (stamp, process, level, clock) after (or instead of) it."""
    i = next(n for n, line in enumerate(lines) if needle in line)
    prefix = lines[i].split("] ", 1)[0]
    new = f"{prefix.rsplit('[', 1)[0]}[startup_plan.py:153] {message}"
    return [*lines[:i], *([] if replace else [lines[i]]), new, *lines[i + 1 :]]


def _as_032(lines: list[str]) -> str:
    """The version lines as vLLM 0.32.0 prints them (logo "version %s", engine "(v%s)"); nothing else changes."""
    return "\n".join(lines).replace("version 0.25.0", "version 0.32.0").replace("engine (v0.25.0)", "engine (v0.32.0)")


def test_plan_state_from_each_line():
    base = _log("bf16-cold")
    assert build_timeline("\n".join(base)).startup_plan is None
    saved = _insert_after(base, "Graph capturing finished", SAVED)  # compile_or_warm_up_model saves it last
    assert build_timeline("\n".join(saved)).startup_plan == "saved"
    refused = _insert_after(_insert_after(base, "Model loading took", NOT_APPLIED), "Graph capturing finished", SAVED)
    assert build_timeline("\n".join(refused)).startup_plan == "not-applied"
    applied = _insert_after(
        _insert_after(base, "Model loading took", APPLIED), "Available KV cache memory", RESERVED, True
    )
    timeline = build_timeline("\n".join(applied))
    assert timeline.startup_plan == "applied"
    # the reserved-memory line still ends memory profiling: the phase stays named, nothing is unattributed
    assert "memory profiling" in [p.name for p in timeline.phases] and timeline.attributed_fraction > 0.99


@pytest.mark.parametrize("run", sorted(p.name for p in RUNS.iterdir() if (p / "server.log").is_file()))
def test_recorded_025_logs_have_no_plan_line_and_no_tq437(run):
    """0.25.0 is not a release read to have the startup plan: no finding, whatever memory profiling took."""
    text = (RUNS / run / "server.log").read_text()
    timeline = build_timeline(text)
    assert timeline.startup_plan is None
    assert startup_plan_finding(text, timeline.phases) is None


def test_tq437_on_a_032_gpu_log_without_a_plan_line():
    text = _as_032(_log("bf16-cold"))
    timeline = build_timeline(text)
    finding = startup_plan_finding(text, timeline.phases)
    assert finding is not None and finding.id == "TQ437" and finding.severity.value == "info"
    assert finding.evidence["memory_profiling_s"] == pytest.approx(2.28, abs=0.05)
    assert finding.evidence["vllm_version"] == "0.32.0" and "startup_plan = true" in finding.remediation
    for line in (APPLIED, NOT_APPLIED, SAVED):  # any plan line: the plan is on
        with_plan = _as_032(_insert_after(_log("bf16-cold"), "Model loading took", line))
        assert startup_plan_finding(with_plan, build_timeline(with_plan).phases) is None
    short = _as_032(_log("tq-warm"))  # memory profiling 1.1 s: below the 2 s floor
    assert startup_plan_finding(short, build_timeline(short).phases) is None


def test_no_tq437_on_the_cpu_build():
    text = (CPU_LOGS / "tiny-cold.log").read_text()  # 0.32.0, device_config=cpu: the CPU worker has no plan
    assert startup_plan_finding(text, build_timeline(text).phases) is None


def test_both_names_the_memory_profiling_the_plan_saved():
    cold_lines = _insert_after(_log("bf16-cold"), "Graph capturing finished", SAVED)
    warm_lines = _insert_after(_log("bf16-warm"), "Model loading took", APPLIED)
    warm_lines = _insert_after(warm_lines, "Available KV cache memory", RESERVED, True)
    cold = ProfileResult("cold", build_timeline("\n".join(cold_lines)))
    warm = ProfileResult("warm", build_timeline("\n".join(warm_lines)))
    plan = compare(cold, warm)["startup_plan"]
    assert plan["cold"] == "saved" and plan["warm"] == "applied" and plan["phase"] == "memory profiling"
    assert plan["saved_s"] == pytest.approx(plan["cold_s"] - plan["warm_s"], abs=0.002)
    off = compare(ProfileResult("cold", build_timeline("\n".join(_log("bf16-cold")))), cold)["startup_plan"]
    assert off["cold"] is None and off["warm"] == "saved" and off["saved_s"] is None  # nothing applied


# the H200 host (tests/fixtures/hosts/h200-1gpu/load_floor.txt): dd O_DIRECT 1.6 GB/s; safetensors -> cuda
# 8 GiB in 6.82 s after fadvise DONTNEED (cold), 1.12 s warm
H200_DISK = {"gb_per_s": 1.6, "fs_type": "ext4", "method": "O_DIRECT"}


def _weights(seconds: float, gib: float = 8.0) -> dict:
    return {"bytes": round(gib * GiB), "seconds": seconds, "gb_per_s": round(gib * GiB / 1e9 / seconds, 3)}


def test_tq436_io_bound_cold_load_on_the_h200_figures():
    w = disk_figures(_weights(6.82), {"fraction": 0.03}, "before start", H200_DISK)
    assert w["disk_read_gb_per_s"] == 1.6 and w["vs_disk"] == pytest.approx(1.26 / 1.6, abs=0.01)
    assert w["page_cache_resident_fraction"] == 0.03 and w["page_cache_measured"] == "before start"
    finding = weight_load_finding(w)
    assert finding is not None and finding.id == "TQ436" and finding.severity.value == "warn"
    assert "fastsafetensors" in finding.remediation and "runai_streamer" in finding.remediation
    line = weights_line(w)
    assert line.startswith("weights 8.6 GB in 6.8 s = 1.26 GB/s; disk (O_DIRECT) 1.60 GB/s; page cache 3% resident")


def test_tq436_stays_silent_or_says_where_the_time_goes():
    warm = disk_figures(_weights(6.82), {"fraction": 0.97}, "before start", H200_DISK)
    assert weight_load_finding(warm) is None  # read from memory: the disk explains nothing
    after = weight_load_finding(disk_figures(_weights(6.82), {"fraction": 1.0}, "after the load", H200_DISK))
    assert after is not None and after.severity.value == "info" and "unknown" in after.title
    slow = weight_load_finding(disk_figures(_weights(40.0), {"fraction": 0.02}, "before start", H200_DISK))
    assert slow is not None and slow.severity.value == "info" and "not the bottleneck" in slow.title
    assert "a faster disk will not help" in slow.remediation and "runai_streamer" in slow.remediation
    assert weight_load_finding(disk_figures(_weights(1.12, 1.0), {"fraction": 0.0}, "before start", H200_DISK)) is None
    middle = weight_load_finding(disk_figures(_weights(12.0), {"fraction": 0.0}, "before start", H200_DISK))
    assert middle is not None and middle.severity.value == "info" and "not the bottleneck" in middle.title  # 0.45x
    refused = {"gb_per_s": None, "fs_type": "tmpfs", "reason": "weights on tmpfs: its reads are memory reads"}
    w = disk_figures(_weights(6.82), {"fraction": 0.0}, "before start", refused)
    assert w["disk_read_gb_per_s"] is None and "tmpfs" in w["disk_note"] and w["vs_disk"] is None
    assert weight_load_finding(w) is None and "disk: weights on tmpfs" in weights_line(w)
    unmeasured = disk_figures(_weights(6.82), None, "before start", None)
    assert unmeasured["vs_disk"] is None and weight_load_finding(unmeasured) is None


def test_log_mode_with_model_measures_the_real_disk(run_cli, tmp_path):
    """`--log FILE --model DIR`: the tiny checkpoint's real file is read with O_DIRECT (the repo's filesystem)."""
    from support.vllm_server import tiny_model_dir

    model = tiny_model_dir()
    log = CPU_LOGS / "tiny-cold.log"
    code, stdout, _ = run_cli("profile", "--log", str(log), "--model", str(model), "--out", str(tmp_path), "--json")
    assert code == 0
    data = json.loads(stdout)
    w = data["weights"]
    assert w["page_cache_measured"] == "after the load" or w.get("page_cache_note")
    disk = data["context"]["disk"]["direct_read"]
    if w["disk_read_gb_per_s"] is None:  # a filesystem that refuses O_DIRECT says why instead
        assert w["disk_note"] == disk["reason"]
    else:
        assert w["disk_read_gb_per_s"] > 0 and disk["files"] == [str(model / "model.safetensors")]
        assert w["vs_disk"] == pytest.approx(w["gb_per_s"] / w["disk_read_gb_per_s"], rel=0.01)
    assert data["startup_plan"] is None and not [f for f in data["findings"] if f["id"] in ("TQ436", "TQ437")]
    code, stdout, _ = run_cli("profile", "--log", str(log), "--model", str(model), "--out", str(tmp_path), "--no-chart")
    assert code == 0 and "startup plan: no plan line" in stdout and "disk" in stdout
