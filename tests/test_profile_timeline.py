"""Start-up timelines from real vLLM logs (tests/fixtures/vllm-logs: CPU 0.32.0 and H200 0.25.0)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tqdeploy.profile.timeline import UNATTRIBUTED, Event, build_timeline
from tqdeploy.runtime.logstamp import split, stamp

LOGS = Path(__file__).parent / "fixtures" / "vllm-logs"
CPU = LOGS / "cpu-vllm-0.32.0"
H200 = LOGS / "h200-vllm-0.25.0"


def phases(t) -> dict[str, float]:
    return {p.name: p.seconds for p in t.phases}


def test_cpu_cold_log_phases_from_vllm_clock():
    t = build_timeline((CPU / "tiny-cold.log").read_text())
    assert not t.stamped and t.origin.startswith("first vLLM log line")
    got = phases(t)
    # 09:40:53 args -> 09:41:17 engine -> 09:41:29 load -> 09:41:56 AOT saved -> 09:41:57 "Warming up done."
    # (the compiling warm-up run ends there, cpu_model_runner.py) -> ... -> 09:42:06 listening
    assert got["config + engine process start"] == 24
    assert got["worker start"] == 12
    assert got["torch.compile"] == 28
    assert got["engine warm-up"] == 8
    assert t.wall_seconds == 73  # README: /health after 85.3 s from launch; the 12 s of imports are untimed
    assert t.compile_cache == "miss"
    # uvicorn's lines carry no time in a raw log: said, not guessed
    assert any("process start + imports" in u for u in t.untimed)
    assert "first /health 200" in t.untimed and "API app start-up" in t.untimed
    assert t.attributed_fraction == 1.0


def test_cpu_warm_log_shows_the_aot_cache_load_failure():
    t = build_timeline((CPU / "tiny-warm.log").read_text())
    # the CPU build recompiles: "Compiling model again due to a load failure ... finalize_loading"
    assert t.compile_cache == "load-failed"
    assert (
        phases(t)["torch.compile"] == 13 < phases(build_timeline((CPU / "tiny-cold.log").read_text()))["torch.compile"]
    )


def test_h200_cold_tq_graph_capture_and_autotune():
    t = build_timeline((H200 / "dense-tq.log").read_text())
    got = phases(t)
    # "Graph capturing finished in 107 secs": the reported length, not a guess
    assert 106 <= got["CUDA graph capture"] <= 108.5
    assert 75 <= got["kernel warm-up (autotune)"] <= 77  # 10:11:02 -> flashinfer's 10:12:18,654
    assert got["torch.compile"] == 11  # "torch.compile took 10.88 s in total" on a one-second clock
    bf16 = phases(build_timeline((H200 / "dense-cold.log").read_text()))
    assert bf16["CUDA graph capture"] < 3


def test_h200_warm_compile_cache_hit_and_dummy_weights():
    warm = build_timeline((H200 / "dense-warm.log").read_text())
    assert warm.compile_cache == "hit"  # "Directly load the compiled graph(s) ... took 0.484 s"
    assert warm.weights["bytes"] == round(0.18 * (1 << 30)) and warm.weights["seconds"] == 2.123023
    assert warm.weights["gb_per_s"] is None and "dummy" in warm.weights["note"]
    cold = build_timeline((H200 / "dense-cold.log").read_text())
    assert cold.compile_cache == "miss"
    assert warm.wall_seconds < cold.wall_seconds / 3


def test_eager_logs_have_no_compile_phase():
    t = build_timeline((H200 / "dense-fp8-eager.log").read_text())
    assert t.compile_cache == "none (eager)"
    assert "torch.compile" not in phases(t) and "CUDA graph capture" not in phases(t)


def test_real_load_rate_from_checkpoint_bytes():
    # a real safetensors read ("Loading weights took 0.01 seconds"); the log's "Checkpoint size: 0.00 GiB"
    # is too coarse, so the checkpoint's own byte count is used when the model folder is known
    t = build_timeline((CPU / "tiny-cold.log").read_text(), weight_bytes=3_000_000)
    assert t.weights == {"bytes": 3_000_000, "seconds": 0.01, "gb_per_s": 0.3}
    dummy = build_timeline((H200 / "q36like-bf16-stalled.log").read_text(), weight_bytes=55_600_000_000)
    assert dummy.weights["gb_per_s"] is None  # --load-format dummy reads nothing


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*/*.log")))
def test_every_fixture_log_parses(name):
    path = next(LOGS.glob(f"*/{name}"))
    t = build_timeline(path.read_text())
    assert t.phases and t.wall_seconds > 0
    assert all(p.seconds >= 0 for p in t.phases)
    starts = [p.start_s for p in t.phases]
    assert starts == sorted(starts)


def _stamped(text: str, t0: float, step: float) -> str:
    return "\n".join(stamp(line, t0 + i * step) for i, line in enumerate(text.splitlines()))


def test_stamped_log_times_every_phase_and_adds_probes():
    raw = (CPU / "tiny-cold.log").read_text()
    t0 = 1_764_000_000.0
    text = _stamped(raw, t0, 0.05)
    assert split(text.splitlines()[0])[0] == t0
    n = len(raw.splitlines())
    probe = [
        Event("health", "first /health 200", -1, t0 + n * 0.05 + 0.5, "probe"),
        Event("first_token", "first token", -1, t0 + n * 0.05 + 0.7, "probe"),
    ]
    t = build_timeline(text, process_start=t0 - 3.0, extra=probe)
    names = [p.name for p in t.phases]
    assert names[0] == "imports + argument parsing" and names[-2:] == ["first /health 200", "first token"]
    assert "API app start-up" in names  # uvicorn's line is timed once stamped
    assert t.untimed == []
    assert t.wall_seconds == pytest.approx(3.0 + n * 0.05 + 0.7, abs=1e-6)
    assert all(p.source in ("stamp", "probe", "log-reported") for p in t.phases)


def test_gap_beyond_a_reported_length_is_unattributed():
    lines = [
        "INFO 12-01 08:00:00 [api_utils.py:286] non-default args: {'model': '/m'}",
        "INFO 12-01 08:00:01 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: x",
        "INFO 12-01 08:00:02 [cpu_model_runner.py:68] Starting to load model /m...",
        "INFO 12-01 08:00:40 [default_loader.py:501] Loading weights took 8.00 seconds",
    ]
    text = "\n".join(stamp(line, 1_764_000_000.0 + (40.0 if i == 3 else 0.0)) for i, line in enumerate(lines))
    t = build_timeline(text)
    got = [(p.name, round(p.seconds, 3)) for p in t.phases]
    assert got == [
        ("imports + argument parsing", 0.0),
        ("config + engine process start", 0.0),
        ("worker start", 0.0),
        (UNATTRIBUTED, 32.0),
        ("weights loaded", 8.0),
    ], got
    assert t.attributed_fraction == pytest.approx(8 / 40)


def test_cold_and_warm_compared_phase_by_phase():
    from tqdeploy.profile.lifecycle import compare
    from tqdeploy.profile.report import ProfileResult

    cold = ProfileResult("cold", build_timeline((H200 / "dense-cold.log").read_text()))
    warm = ProfileResult("warm", build_timeline((H200 / "dense-warm.log").read_text()))
    result = compare(cold, warm)
    rows = {r["phase"]: r for r in result["phases"]}
    assert rows["torch.compile"] == {"phase": "torch.compile", "cold_s": 16.0, "warm_s": 2.0}
    assert result["warm_over_cold"] == round(42 / 175, 3)
    # what a warm start still spends: the engine process start (imports, config) leads
    assert result["warm_still_spends"][0]["phase"] == "config + engine process start"
