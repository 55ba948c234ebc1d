"""The caller's environment (issue 35): variables that change what `up` starts never act silently.

`up` passes TQ_BIND_HOST, TQ_API_KEY_FILE, ... on to serve.sh (runtime/callerenv.py says why), warns (TQ427),
records them in state.json, `status` shows them, and a failed start names them. Real `up` runs: a stand-in
server (test_hostile_procs) for a start that succeeds, a keyed demo build whose serve.sh refuses the key file for
one that fails before vLLM loads.
"""

from __future__ import annotations

import json
import subprocess

from hostile.test_hostile_procs import needs_vllm_python, standin_build
from support.up_builds import TQDEPLOY, assert_nothing_left, env, kill_leftovers, make_build, tq


@needs_vllm_python
def test_env_bind_host_is_warned_recorded_and_shown_by_status(tmp_path):
    build, port = standin_build(tmp_path / "demo")
    try:
        rc, up, out = tq("up", str(build), "--json", "--force", extra_env={"TQ_BIND_HOST": "0.0.0.0"}, timeout=180)
        assert rc == 0 and up["status"] == "ready", out[-2000:]
        (warn,) = [f for f in up["findings"] if f["id"] == "TQ427"]
        assert warn["severity"] == "warn" and "TQ_BIND_HOST=0.0.0.0" in warn["title"]
        recorded = json.loads((build / ".tqdeploy" / "state.json").read_text())
        assert recorded["env_overrides"] == {"TQ_BIND_HOST": "0.0.0.0"}
        rc, st, _ = tq("status", str(build), "--json", timeout=60)
        assert rc == 0 and st["env_overrides"] == {"TQ_BIND_HOST": "0.0.0.0"}
        human = subprocess.run([str(TQDEPLOY), "status", str(build)], capture_output=True, text=True, env=env())
        assert "environment: TQ_BIND_HOST=0.0.0.0 (set by the caller of `up`)" in human.stdout, human.stdout
        rc, down, _ = tq("down", str(build), "--json", "--grace-period", "5", timeout=60)
        assert rc == 0 and down["status"] == "stopped"
        assert_nothing_left(build, up["pgid"], port)
    finally:
        kill_leftovers(build)


def test_env_a_stray_key_file_variable_is_named_by_the_failure(tmp_path):
    build, port = make_build(tmp_path / "keyed")
    stray = tmp_path / "elsewhere" / "key"  # not there: serve.sh refuses it before vLLM loads
    try:
        rc, up, out = tq("up", str(build), "--json", extra_env={"TQ_API_KEY_FILE": str(stray)}, timeout=180)
        assert rc == 1 and up["status"] == "failed", out[-2000:]
        failure = next(f for f in up["findings"] if f["severity"] == "error")
        assert failure["id"] == "TQ413" and failure["evidence"]["reason"] == "key-file", failure
        assert failure["evidence"]["env_overrides"] == {"TQ_API_KEY_FILE": str(stray)}
        assert f"TQ_API_KEY_FILE={stray}" in failure["remediation"]
        recorded = json.loads((build / ".tqdeploy" / "state.json").read_text())
        assert recorded["last_error"]["evidence"]["env_overrides"] == {"TQ_API_KEY_FILE": str(stray)}
        assert_nothing_left(build, up["pgid"], port)
    finally:
        kill_leftovers(build)
