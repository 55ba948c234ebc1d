"""Hostile process cases for up / down / status / logs, on real processes (issue 20, items 1, 2 and 4).

A `sleep` stands in for an unrelated process; state.json is hand-written to point at it, at pid 1 of a
real pid namespace (`unshare --pid --fork --mount-proc`) and at the caller's own group; a `cp -a` copy of
a running build is stopped. The running deployments are the real `tqdeploy up` path (pre-flight, the
detached supervisor, the marker, readiness) with serve.sh's vLLM swapped for STANDIN, a small HTTP server
run by the CPU vLLM's interpreter (the one `up` checks has vLLM); its child retitles itself
`VLLM::EngineCore` with setproctitle as vLLM does, which overwrites the environ block /proc shows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.up_builds import (
    TQDEPLOY,
    assert_nothing_left,
    env,
    kill_leftovers,
    live_members,
    make_build,
    no_answer_check,
    tq,
)
from support.vllm_server import VLLM_PYTHON, vllm_available
from tqdeploy.runtime.state import deployment_marker

needs_vllm_python = pytest.mark.skipif(not vllm_available(), reason="the CPU vLLM's python is not installed")

STANDIN = r"""
import argparse, http.server, json, os, sys, time
p = argparse.ArgumentParser()
p.add_argument("--port", type=int)
p.add_argument("--served-model-name", default="tiny")
args, _ = p.parse_known_args()
ready_after = float(os.environ.get("STANDIN_READY_AFTER", "0"))
if os.fork() == 0:  # the engine: retitled like vLLM's, its /proc environ loses the marker
    import setproctitle
    setproctitle.setproctitle("VLLM::EngineCore")
    while True:
        time.sleep(1)
print("stand-in starting", flush=True)
time.sleep(ready_after if ready_after >= 0 else 10**6)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"" if self.path == "/health" else json.dumps({"data": [{"id": args.served_model_name}]}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
print(f"Starting vLLM server on http://127.0.0.1:{args.port}", flush=True)
http.server.HTTPServer(("127.0.0.1", args.port), H).serve_forever()
"""
EXEC = re.compile(r'^exec python3 .*"\$MODEL_DIR"', re.M)  # serve.sh's launch of vLLM, up to the model


def standin_build(root: Path) -> tuple[Path, int]:
    """A real build whose serve.sh runs STANDIN instead of vLLM (`up --force`: the lock no longer matches)."""
    build, port = make_build(root, keyed=False)  # a stand-in, not vLLM: it replaces the unkeyed exec line
    script = root / "standin.py"
    script.write_text(STANDIN)
    serve = build / "serve.sh"
    text, n = EXEC.subn(f'exec python3 {script} --model "$MODEL_DIR"', serve.read_text())
    assert n == 1
    serve.write_text(text)
    return build, port


def _write_state(build: Path, **fields) -> None:
    state = {
        "schema": "tqdeploy.state/1",
        "runtime": "process",
        "host": "127.0.0.1",
        "port": None,
        "started_at": time.time() - 60,
        "marker": deployment_marker(build),
        "phase": "ready",
        "ready": True,
    } | fields
    (build / ".tqdeploy" / "logs").mkdir(parents=True, exist_ok=True)
    (build / ".tqdeploy" / "logs" / "server.log").write_text("a line\n")
    (build / ".tqdeploy" / "state.json").write_text(json.dumps(state))


def _sleeper(marker: str | None = None) -> subprocess.Popen:
    """An unrelated process in its own session (with the deployment's marker only when given)."""
    e = dict(os.environ) | ({"TQDEPLOY_DEPLOYMENT": marker} if marker else {})
    return subprocess.Popen(["sleep", "300"], start_new_session=True, env=e)


@pytest.fixture
def build(tmp_path):
    b, port = make_build(tmp_path / "demo")
    yield b, port
    kill_leftovers(b)


def _tq425(result: dict) -> dict:
    return next(f for f in result["findings"] if f["id"] == "TQ425")


def test_state_naming_an_unrelated_process_is_not_signalled_by_down_status_or_logs(build):
    b, _ = build
    sleeper = _sleeper()
    try:
        _write_state(b, pid=sleeper.pid, supervisor_pid=sleeper.pid, pgid=sleeper.pid)
        rc, down, out = tq("down", str(b), "--json", "--grace-period", "1", timeout=60)
        assert rc == 0, out
        assert down["status"] == "not-running" and down["stopped"] == [] and sleeper.poll() is None
        named = _tq425(down)["evidence"]
        assert "'sleep'" in named["pid"] and "'sleep'" in named["pgid"], named
        _write_state(b, pid=sleeper.pid, supervisor_pid=sleeper.pid, pgid=sleeper.pid)
        rc, st, _ = tq("status", str(b), "--json", timeout=60)
        assert st["live"] is False and st["processes"] == []
        t0 = time.monotonic()
        logs = subprocess.run([str(TQDEPLOY), "logs", str(b), "-f"], capture_output=True, text=True, timeout=30)
        assert logs.returncode == 0 and logs.stdout == "a line\n" and time.monotonic() - t0 < 15
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_marked_process_older_than_the_state_is_not_this_run_but_down_force_stops_it(build):
    b, _ = build
    sleeper = _sleeper(deployment_marker(b))
    try:
        _write_state(b, pid=sleeper.pid, pgid=sleeper.pid, started_at=time.time() + 30)
        rc, down, _ = tq("down", str(b), "--json", "--grace-period", "1", timeout=60)
        assert rc == 0 and down["stopped"] == [] and sleeper.poll() is None
        assert "'sleep'" in _tq425(down)["evidence"]["pid"]
        rc, down, _ = tq("down", str(b), "--json", "--force", "--grace-period", "2", timeout=60)
        assert rc == 0 and [p["pid"] for p in down["stopped"]] == [sleeper.pid]
        assert sleeper.wait(timeout=10) == -signal.SIGTERM
    finally:
        sleeper.kill()
        sleeper.wait()


CALLER = r"""
import json, os, subprocess, sys, time
build, tqdeploy, marker = sys.argv[1:4]
child = subprocess.Popen(["sleep", "300"])  # the invoking shell's own job, marked, in its group
state = {"schema": "tqdeploy.state/1", "pid": os.getpid(), "supervisor_pid": child.pid, "pgid": os.getpgrp(),
         "started_at": time.time() - 60, "marker": marker, "host": "127.0.0.1", "port": None}
open(os.path.join(build, ".tqdeploy", "state.json"), "w").write(json.dumps(state))
down = subprocess.run([tqdeploy, "down", build, "--json", "--grace-period", "1"], capture_output=True, text=True)
print(json.dumps({"rc": down.returncode, "down": json.loads(down.stdout), "child_alive": child.poll() is None}))
child.kill()
"""


def test_state_naming_the_callers_own_group_leaves_the_invoking_shell_alive(build, tmp_path):
    b, _ = build
    (b / ".tqdeploy").mkdir(exist_ok=True)
    marker = deployment_marker(b)
    e = env() | {"TQDEPLOY_DEPLOYMENT": marker}  # the shell and its job even carry the marker
    caller = subprocess.run(
        [sys.executable, "-c", CALLER, str(b), str(TQDEPLOY), marker],
        capture_output=True,
        text=True,
        env=e,
        timeout=120,
        start_new_session=True,
    )
    assert caller.returncode == 0, caller.stderr  # a SIGTERMed caller would be -15 and print nothing
    out = json.loads(caller.stdout)
    assert out["rc"] == 0 and out["child_alive"] and out["down"]["stopped"] == []
    named = _tq425(out["down"])["evidence"]
    assert "ancestor of the caller" in named["pid"] or "own process group" in named["pid"], named
    assert "own process group" in named["supervisor_pid"], named


NS_INIT = r"""
import json, os, signal, subprocess, sys, time
build, tqdeploy, marker = sys.argv[1:4]
assert os.getpid() == 1
os.setsid()  # pid 1 leads process group 1 and session 1 of the namespace
got = []
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, lambda n, f: got.append(n))  # init receives what it handles: record every signal
job = subprocess.Popen(["sleep", "300"])  # in group 1, with the marker
state = {"schema": "tqdeploy.state/1", "pid": 1, "supervisor_pid": job.pid, "pgid": 1,
         "started_at": time.time() - 60, "marker": marker, "host": "127.0.0.1", "port": None}
open(os.path.join(build, ".tqdeploy", "state.json"), "w").write(json.dumps(state))
for force in ([], ["--force"]):
    down = subprocess.run([tqdeploy, "down", build, "--json", "--grace-period", "1", *force], capture_output=True,
                          text=True, start_new_session=True)
    time.sleep(0.5)
    print(json.dumps({"rc": down.returncode, "down": json.loads(down.stdout), "signals": got,
                      "job_alive": job.poll() is None, "job_pid": job.pid}), flush=True)
job.kill()
"""


def test_in_a_pid_namespace_pid_1_and_group_1_are_never_signalled(build):
    b, _ = build
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare for a pid namespace")
    (b / ".tqdeploy").mkdir(exist_ok=True)
    marker = deployment_marker(b)
    ns = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", NS_INIT, str(b), str(TQDEPLOY), marker],
        capture_output=True,
        text=True,
        env=env() | {"TQDEPLOY_DEPLOYMENT": marker},  # pid 1 and its job carry this folder's marker
        timeout=180,
    )
    assert ns.returncode == 0, ns.stderr[-2000:]
    runs = [json.loads(line) for line in ns.stdout.splitlines()]
    assert len(runs) == 2  # down, then down --force: neither may touch them
    for run in runs:
        assert run["rc"] == 0 and run["signals"] == [] and run["job_alive"], run
        assert run["down"]["stopped"] == []
    named = _tq425(runs[0]["down"])["evidence"]
    assert "pid 1 (init), never signalled" in named["pid"] and "process group 1" in named["supervisor_pid"]


def _up(build: Path, *args: str, extra_env: dict | None = None, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [str(TQDEPLOY), "up", str(build), "--json", "--force", *no_answer_check(), *args],  # a stand-in: no answers
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env() | (extra_env or {}),
        **popen,
    )


def _wait_engine(build: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(t.startswith("VLLM::EngineCor") for _, t in live_members(build)):
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    raise AssertionError("no VLLM::EngineCore stand-in appeared")


@needs_vllm_python
def test_down_of_a_cp_a_copy_leaves_the_running_original_alone(tmp_path):
    b, port = standin_build(tmp_path / "orig")
    try:
        rc, up, out = tq("up", str(b), "--json", "--force", timeout=180)
        assert rc == 0 and up["status"] == "ready", out[-2000:]
        before = live_members(b)
        assert any(t.startswith("VLLM::EngineCor") for _, t in before), before  # found through its group
        copy = tmp_path / "copy"
        subprocess.run(["cp", "-a", str(b), str(copy)], check=True)
        assert deployment_marker(copy) != deployment_marker(b)
        # The copied state names the original's files: read_state may refuse it (exit 2) before the marker
        # is compared; either way nothing is stopped. --force ignores the state: the marker alone decides.
        rc, down, out = tq("down", str(copy), "--json", "--grace-period", "2", timeout=60)
        assert (rc == 2 and "corrupt" in out) or (rc == 0 and down["stopped"] == []), out
        if rc == 0:
            assert _tq425(down)["evidence"]["recorded_marker"] == deployment_marker(b)
        rc, down, out = tq("down", str(copy), "--json", "--force", "--grace-period", "2", timeout=60)
        assert rc == 0 and down["status"] == "not-running" and down["stopped"] == [], out
        assert live_members(b) == before
        rc, st, _ = tq("status", str(b), "--json", timeout=60)
        assert rc == 0 and st["state"] == "ready" and live_members(b) == before
        rc, again, _ = tq("up", str(copy), "--json", "--force", timeout=120)  # another deployment: its own checks
        assert again["status"] == "refused" and "TQ401" in [f["id"] for f in again["findings"]]
        rc, down, _ = tq("down", str(b), "--json", "--grace-period", "5", timeout=60)
        assert rc == 0 and down["status"] == "stopped" and down["left"] == [] and down["port_free"] is True
        assert_nothing_left(b, up["pgid"], port)
    finally:
        kill_leftovers(b)


@needs_vllm_python
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_up_stops_everything_it_started(tmp_path, sig, code):
    b, port = standin_build(tmp_path / "sig")
    try:
        # A shell's background job inherits SIGINT as ignored: give `up` the disposition a terminal gives.
        proc = _up(b, extra_env={"STANDIN_READY_AFTER": "-1"}, preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
        _wait_engine(b, proc)
        pgid = json.loads((b / ".tqdeploy" / "state.json").read_text())["pgid"]
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err[-2000:]
        up = json.loads(out)
        assert up["status"] == "interrupted" and up["interrupted_by"] == sig.name
        line = [x for x in err.splitlines() if "interrupted by" in x]
        assert len(line) == 1 and f"interrupted by {sig.name}: stopped" in line[0], err
        assert_nothing_left(b, pgid, port)
        st = json.loads((b / ".tqdeploy" / "state.json").read_text())
        assert st["phase"] == "stopped" and st["ready"] is False
    finally:
        kill_leftovers(b)


@needs_vllm_python
def test_two_concurrent_ups_one_wins_the_other_gets_tq414_at_once(tmp_path):
    b, port = standin_build(tmp_path / "race")
    try:
        first, second = (_up(b, extra_env={"STANDIN_READY_AFTER": "3"}) for _ in range(2))
        results = []
        for proc in (first, second):
            out, err = proc.communicate(timeout=180)
            results.append((proc.returncode, json.loads(out), err))
        statuses = sorted(r[1]["status"] for r in results)
        assert statuses == ["ready", "refused"], [r[2][-1500:] for r in results]
        rc, refused, _ = next(r for r in results if r[1]["status"] == "refused")
        assert rc == 1 and [f["id"] for f in refused["findings"]] == ["TQ414"]
        servers = [pid for pid, title in live_members(b) if title.startswith("VLLM::")]
        assert len(servers) == 1, live_members(b)  # one deployment, no orphan of the loser
        rc, down, _ = tq("down", str(b), "--json", "--grace-period", "5", timeout=60)
        assert rc == 0 and down["left"] == []
        assert_nothing_left(b, None, port)
    finally:
        kill_leftovers(b)


HOSTILE = "a $(touch PWNED) `touch PWNED2` 'q\" x\nnl"
RUNNABLE = "a $(touch PWNED) `touch PWNED2` 'q\" x;y|z"  # what `up` accepts: no control characters


def _hostile_python(root: Path, name: str = RUNNABLE) -> Path:
    """The CPU vLLM's interpreter behind a path with $(), backticks, quotes, spaces (and what name adds)."""
    venv = root / name
    (venv / "bin").mkdir(parents=True)
    real = Path(os.path.realpath(VLLM_PYTHON))
    (venv / "bin" / "python").symlink_to(real)
    shutil.copy(VLLM_PYTHON.parent.parent / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "lib").symlink_to(os.path.realpath(VLLM_PYTHON.parent.parent / "lib"))
    return venv / "bin" / "python"


def test_the_shims_quote_a_hostile_python_and_build_path(tmp_path):
    from tqdeploy.runtime.backends.process.launch import write_shims

    build = tmp_path / HOSTILE / "build"
    build.mkdir(parents=True)
    python = tmp_path / HOSTILE / "py" / "python"
    python.parent.mkdir()
    python.symlink_to(sys.executable)
    bin_dir = write_shims(build, str(python))
    for shim, args in (("python3", ["-c", "import sys; print(sys.argv[1:])", "$(x)", "a b"]), ("vllm", ["--help"])):
        run = subprocess.run([str(bin_dir / shim), *args], capture_output=True, text=True, cwd=tmp_path, timeout=60)
        if shim == "python3":
            assert run.returncode == 0 and run.stdout == "['$(x)', 'a b']\n", run.stderr
        else:  # this python has no vllm: the shim ran exactly it (its name is in the error), with -m vllm...
            assert run.stderr.startswith(f"{python}: Error while finding module specification for 'vllm."), run.stderr
    assert not list(tmp_path.rglob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))


@needs_vllm_python
def test_up_with_a_hostile_python_path_runs_nothing_of_it(tmp_path):
    b, port = standin_build(tmp_path / "q")
    python = _hostile_python(tmp_path)
    try:
        rc, up, out = tq("up", str(b), "--json", "--force", "--python", str(python), timeout=180)
        assert rc == 0 and up["status"] == "ready", out[-2000:]
        assert json.loads((b / ".tqdeploy" / "state.json").read_text())["backend"]["python"] == str(python)
        assert not list(tmp_path.rglob("PWNED*")) and not list(b.rglob("PWNED*"))
        shim = (b / ".tqdeploy" / "bin" / "python3").read_text()
        assert shim.startswith("#!/bin/sh\nexec '") and RUNNABLE.replace("'", "'\"'\"'") in shim
        rc, down, _ = tq("down", str(b), "--json", "--grace-period", "5", timeout=60)
        assert rc == 0 and down["status"] == "stopped"
        assert_nothing_left(b, up["pgid"], port)
    finally:
        kill_leftovers(b)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e9"])
def test_down_refuses_a_grace_period_that_is_not_seconds(build, value):
    b, _ = build
    rc, _, err = tq("down", str(b), "--grace-period", value, timeout=60)
    assert rc == 2 and "--grace-period" in err and len(err.strip().splitlines()) <= 2 and "Traceback" not in err


def test_down_with_an_unresolvable_state_host_does_not_wait_on_it(build):
    b, _ = build
    _write_state(b, host="no-such-host.invalid", port=8000)
    t0 = time.monotonic()
    rc, down, out = tq("down", str(b), "--json", timeout=60)
    assert rc == 0 and time.monotonic() - t0 < 10, out
    assert down["port_free"] is None and "TQ422" not in [f["id"] for f in down["findings"]]
    assert _tq425(down)["evidence"]["host"] == "no-such-host.invalid"


def test_up_refuses_a_python_or_build_path_with_a_newline_before_running_anything(build, tmp_path):
    b, _ = build
    python = _hostile_python(tmp_path, HOSTILE)
    rc, _, err = tq("up", str(b), "--python", str(python), timeout=60)
    assert rc == 2 and "control character" in err and "Traceback" not in err
    assert not (b / ".tqdeploy" / "logs").exists() and not list(tmp_path.rglob("PWNED*"))
    odd = tmp_path / "x\ny"
    shutil.copytree(b, odd, symlinks=True)
    rc, _, err = tq("up", str(odd), timeout=60)
    assert rc == 2 and "control character" in err and not (odd / ".tqdeploy" / "logs").exists()
