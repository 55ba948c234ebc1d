"""The Docker probe and checks against the real Docker engine of this machine (no NVIDIA runtime here)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tqdeploy.doctor.registry import REGISTRY, CheckContext
from tqdeploy.probe.docker_engine import probe_docker
from tqdeploy.snapshot import HostSnapshot

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def engine_version() -> str:
    def version():
        res = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True)
        return res.stdout.strip() if res.returncode == 0 else ""

    if not version():
        subprocess.run(["bash", str(REPO / "scripts" / "start-dockerd.sh")], capture_output=True, text=True)
    v = version()
    assert v, "the Docker engine did not start (scripts/start-dockerd.sh)"
    return v


def test_real_engine_is_probed_through_the_sdk(engine_version):
    import tqdeploy.doctor.checks.host  # noqa: F401

    out = probe_docker()
    assert out["reachable"] is True and out["error"] == ""
    assert out["server_version"] == engine_version
    assert "runc" in out["runtimes"] and "nvidia" not in out["runtimes"]
    ctx = CheckContext(host=HostSnapshot(docker=out), options={"vllm_version": "0.32.0"})
    (engine,) = REGISTRY["TQ119"].run(ctx)
    assert engine.severity.value == "ok" and engine_version in engine.title
    (runtime,) = REGISTRY["TQ120"].run(ctx)
    assert runtime.severity.value == "warn" and "nvidia-ctk runtime configure" in runtime.remediation


def test_unreachable_engine_within_the_timeout(tmp_path, monkeypatch):
    import time

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")
    t0 = time.perf_counter()
    out = probe_docker()
    assert out["reachable"] is False and out["error"] and time.perf_counter() - t0 < 3
