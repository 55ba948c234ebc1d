"""Multi-node parts without vLLM, on real files and processes: the rendered multinode.sh run by sh (its refusals
and the node flags it leaves), the worker supervisor's record of a real child, the watch that turns a dead worker
into TQ470 at once, and records that are not this deployment's being ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tqdeploy.deployspec import load_spec
from tqdeploy.nodefile import build_record
from tqdeploy.render.files import render_files
from tqdeploy.runtime.backends.multinode import nodes as multinode
from tqdeploy.runtime.state import MARKER_ENV, deployment_marker

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "scripts" / "multinode" / "tiny-cpu-multinode.toml"


@pytest.fixture()
def build(tmp_path):
    out = tmp_path / "build"
    for rel, f in render_files(load_spec(SPEC)).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(f.data)
    return out


def _fake_python(tmp: Path, version: str) -> Path:
    """A `python3` first in PATH that answers multinode.sh's version question as a node with that vLLM would."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python3").write_text(f"#!/bin/sh\necho {version}\n")
    (bin_dir / "python3").chmod(0o755)
    return bin_dir


def _source(build: Path, tmp: Path, version: str = "0.32.0", **env: str) -> subprocess.CompletedProcess:
    script = f'. "{build}/multinode.sh" >/dev/null; printf "%s\\n" "$@"'
    e = {"PATH": f"{_fake_python(tmp, version)}:/usr/bin:/bin", **env}
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=e, timeout=30)


def test_the_build_renders_the_node_script_and_records_what_nodes_agree_on(build):
    record = json.loads((build / "multinode.json").read_text())
    assert record["nodes"] == 2 and record["backend"] == "mp" and record["vllm_version"] == "0.32.0"
    serve = (build / "serve.sh").read_text()
    assert "--pipeline-parallel-size 2" in serve and "--distributed-executor-backend mp" in serve
    assert serve.rstrip().endswith('"$@"') and "multi-node-serving.sh" not in serve
    assert build_record(build) == record


def test_leader_and_worker_get_vllm_s_own_node_flags(build, tmp_path):
    leader = _source(build, tmp_path, TQ_ROLE="leader", TQ_MASTER_PORT="29611")
    assert leader.returncode == 0, leader.stderr
    assert leader.stdout.split() == "--nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port 29611".split()
    worker = _source(build, tmp_path, TQ_ROLE="worker", LWS_WORKER_INDEX="1", LWS_LEADER_ADDRESS="lead.svc")
    assert worker.returncode == 0, worker.stderr
    assert worker.stdout.split()[-3:] == ["--master-port", "29501", "--headless"]
    assert "--master-addr\nlead.svc" in worker.stdout


@pytest.mark.parametrize(
    "env,code,said",
    [
        ({"TQ_ROLE": "worker", "TQ_NODE_RANK": "2", "TQ_MASTER_ADDR": "10.0.0.1"}, 78, "outside 1..1"),
        ({"TQ_ROLE": "worker", "TQ_NODE_RANK": "1"}, 78, "leader's address is unknown"),
        ({"TQ_ROLE": "boss"}, 78, "neither leader nor worker"),
        ({"TQ_ROLE": "leader", "TQ_MASTER_PORT": "80"}, 78, "outside 1024-65535"),
        ({"TQ_ROLE": "leader", "LWS_GROUP_SIZE": "3"}, 78, "LWS_GROUP_SIZE=3"),
    ],
)
def test_a_misconfigured_node_is_refused_before_vllm_starts(build, tmp_path, env, code, said):
    done = _source(build, tmp_path, **env)
    assert done.returncode == code and said in done.stderr and "fix:" in done.stderr


def test_a_node_with_another_vllm_is_refused(build, tmp_path):
    done = _source(build, tmp_path, version="0.31.0", TQ_ROLE="leader")
    assert done.returncode == 79 and "runs vLLM '0.31.0', the build was rendered for 0.32.0" in done.stderr


def _run_worker(build: Path, command: str, marker: str) -> subprocess.Popen:
    log = build / ".tqdeploy" / "logs" / "worker-1.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    multinode.nodes_dir(build).mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **{MARKER_ENV: marker})
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "tool"), env.get("PYTHONPATH", "")])
    args = [
        sys.executable,
        "-m",
        "tqdeploy.runtime.backends.multinode.nodes",
        str(build),
        "1",
        str(log),
        "--",
        "sh",
        "-c",
        command,
    ]
    return subprocess.Popen(args, env=env, start_new_session=True)


def test_a_worker_that_exits_is_tq470_with_its_own_log_s_words(build):
    marker, started = deployment_marker(build), time.time()
    watch = multinode.worker_watch(build, marker, started)
    sup = _run_worker(build, "echo 'multinode.sh: node 1 runs vLLM 0.31.0' >&2; exit 79", marker)
    assert sup.wait(timeout=30) == 0
    found = watch()
    assert found is not None and found.id == "TQ470" and "exited with code 79" in found.title
    assert found.evidence["rank"] == 1 and "runs vLLM 0.31.0" in found.evidence["root_cause"]
    assert "install the build's vLLM on every node" in found.remediation
    (rec,) = multinode.workers(build, marker, started)
    assert rec["pgid"] == sup.pid and rec["exit_code"] == 79  # its own process group, as a pod


def test_a_running_worker_is_no_finding_and_a_foreign_record_is_ignored(build):
    marker, started = deployment_marker(build), time.time()
    sup = _run_worker(build, "sleep 30", marker)
    try:
        deadline = time.monotonic() + 10
        while not multinode.workers(build, marker, started) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert multinode.workers(build, marker, started) and multinode.worker_watch(build, marker, started)() is None
        assert multinode.workers(build, "another-folder", started) == []  # a copied build's record: not ours
        assert multinode.workers(build, marker, time.time() + 60) == []  # an earlier run's record
    finally:
        os.killpg(sup.pid, 9)
        sup.wait(timeout=10)


def test_a_deep_build_gets_a_short_private_tmpdir_for_vllm_s_ipc_sockets(tmp_path):
    # vLLM's ZMQ ipc path is TMPDIR/<uuid4>, at most 107 characters (seen failing under pytest's tmp_path).
    deep = tmp_path / ("d" * 80) / "build"
    deep.mkdir(parents=True)
    short = multinode.node_tmp(deep, 1, "0123456789abcdef")
    assert len(str(short)) + 37 <= 107 and short.is_dir() and not short.is_symlink()
    assert os.stat(short).st_mode & 0o777 == 0o700 and multinode.node_tmp(deep, 1, "0123456789abcdef") == short
    short.rmdir()
    near = tmp_path / "b"
    near.mkdir()
    if len(str(near)) < 40:
        assert multinode.node_tmp(near, 1, "x").is_relative_to(near)


def test_down_removes_the_fallback_folder_s_sockets_but_keeps_anything_else(tmp_path):
    import socket as sock
    import tempfile

    marker = "feedfacecafe0000"
    folders = [Path(tempfile.gettempdir()) / f"tqdeploy-{marker[:12]}-node{r}" for r in (0, 1)]
    for folder in folders:
        folder.mkdir(mode=0o700)
        with sock.socket(sock.AF_UNIX) as s:
            s.bind(str(folder / "ipc"))
    (folders[1] / "notes.txt").write_text("not vLLM's")
    multinode.remove_short_tmps(marker)
    assert not folders[0].exists()
    assert sorted(p.name for p in folders[1].iterdir()) == ["notes.txt"]
    (folders[1] / "notes.txt").unlink()
    folders[1].rmdir()
