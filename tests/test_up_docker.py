"""`tqdeploy up --runtime docker` against the real Docker engine.

The image stands in for the vllm-cpu image (see support/up_docker.py): busybox with a stand-in `python3`
that serves /health and /v1/models, and the serve.sh that `tqdeploy build` rendered as its entrypoint, so
the container runs the rendered script with the mounts, secret, limits and port the runtime gives it.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from support.up_builds import TQDEPLOY, assert_nothing_left, env, kill_leftovers, make_build
from support.up_docker import docker_client, stand_in_image

pytestmark = pytest.mark.docker

API_KEY = "tq-seeded-up-docker-key-51c0"


@pytest.fixture(scope="module")
def client():
    c = docker_client()
    if c is None:
        pytest.skip("no Docker engine (make dockerd)")
    return c


@pytest.fixture(scope="module")
def deployment(client, tmp_path_factory):
    root = tmp_path_factory.mktemp("updocker")
    build, port = make_build(root)  # keyed: build created secrets/vllm-api-key; the test seeds its own key
    (build / "secrets" / "vllm-api-key").write_text(API_KEY + "\n")
    (build / "secrets" / "vllm-api-key").chmod(0o644)  # read by uid 2000 inside
    tag = stand_in_image(client, root, build, f"tqdeploy-test/up-stand-in:{port}")
    yield build, port, tag
    subprocess.run([str(TQDEPLOY), "down", str(build), "--force"], capture_output=True, env=env(), timeout=120)
    kill_leftovers(build)
    for c in client.containers.list(all=True, filters={"ancestor": tag}):
        c.remove(force=True)
    client.images.remove(tag, force=True)


def _tq(*args):
    proc = subprocess.run([str(TQDEPLOY), *args], capture_output=True, text=True, env=env(), timeout=180)
    return proc.returncode, (json.loads(proc.stdout) if proc.stdout.startswith("{") else None), proc.stderr


def _log_when(build, text: str, timeout: float = 20.0) -> str:
    import time

    deadline = time.monotonic() + timeout
    log = ""
    while time.monotonic() < deadline:
        log = (build / ".tqdeploy" / "logs" / "server.log").read_text()
        if text in log:
            break
        time.sleep(0.2)
    return log


def test_container_runs_with_the_specs_settings_serves_and_stops(client, deployment):
    build, port, tag = deployment
    # the stand-in image answers /health and /v1/models, no completion: no answers to check
    args = ("--runtime", "docker", "--image", tag, "--no-check", "--json", "--timeout", "60")
    rc, up, err = _tq("up", str(build), *args)
    assert rc == 0, (up, err)
    assert up["runtime"] == "docker" and up["status"] == "ready"
    state = json.loads((build / ".tqdeploy" / "state.json").read_text())
    container = client.containers.get(state["backend"]["container_id"])
    host = container.attrs["HostConfig"]
    assert host["IpcMode"] == "host"
    # memlock unlimited and nofile 65536 (compose.yaml), capped at dockerd's own hard limits, with a warning:
    # this engine runs with memlock 8 MiB / nofile 20000, and a container cannot get more than dockerd has.
    from tqdeploy.runtime.backends.docker.container import engine_limits, ulimits_for_engine

    values, capped = ulimits_for_engine(engine_limits())
    assert {u["Name"]: (u["Soft"], u["Hard"]) for u in host["Ulimits"]} == {k: (v, v) for k, v in values.items()}
    assert ("TQ423" in [f["id"] for f in up["findings"]]) == bool(capped)
    assert host["PortBindings"] == {f"{port}/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(port)}]}
    mounts = {m["Destination"]: m for m in container.attrs["Mounts"]}
    assert mounts["/models/tiny"]["RW"] is False and mounts["/run/secrets/vllm-api-key"]["RW"] is False
    assert mounts["/cache"]["RW"] is True
    env_vars = container.attrs["Config"]["Env"]
    assert "TQ_BIND_HOST=0.0.0.0" in env_vars and not any(API_KEY in e for e in env_vars)
    log = _log_when(build, "Starting vLLM server on")  # the pump may attach after the stand-in is already up
    # launch_vllm.py reads the mounted secret in-process: the key is in neither the environment nor the log
    assert "stand-in argv: /opt/tqdeploy/launch_vllm.py /models/tiny " in log
    assert "VLLM_API_KEY: absent" in log and API_KEY not in log
    assert "Starting vLLM server on" in log

    rc, st, _ = _tq("status", str(build), "--json")
    assert rc == 0 and st["ready"] and st["container"]["status"] == "running" and st["health"] == 200

    rc, down, _ = _tq("down", str(build), "--json", "--grace-period", "5")
    assert rc == 0 and down["status"] == "stopped" and down["port_free"] is True
    assert not client.containers.list(all=True, filters={"id": state["backend"]["container_id"]})
    assert_nothing_left(build, None, port)


def test_container_exit_is_classified_from_its_log(client, deployment):
    build, port, tag = deployment
    (build / "models" / "tiny" / "CRASH").write_text("")  # the stand-in then fails as vLLM does
    try:
        args = ("--runtime", "docker", "--image", tag, "--no-check", "--json", "--timeout", "60")
        rc, up, err = _tq("up", str(build), *args)
    finally:
        (build / "models" / "tiny" / "CRASH").unlink()
    assert rc == 1, (up, err)
    errors = [f for f in up["findings"] if f["severity"] == "error"]
    assert [f["id"] for f in errors] == ["TQ402"] and errors[0]["evidence"]["exit_code"] == 1
    assert errors[0]["evidence"]["estimated_max_model_len"] == 256
    assert not client.containers.list(all=True, filters={"label": "io.tqdeploy.build-dir=" + str(build)})
    assert_nothing_left(build, None, port)
