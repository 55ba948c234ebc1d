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


KEYED_STANDIN = r"""
import argparse, http.server, json, os
p = argparse.ArgumentParser()
p.add_argument("model")
p.add_argument("--port", type=int)
p.add_argument("--served-model-name", default="tiny")
args, _ = p.parse_known_args()
key = open(os.environ["TQ_API_KEY_FILE"]).read().strip()  # as launch_vllm.py: the key from the file serve.sh names
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path == "/health" or self.headers.get("Authorization") == f"Bearer {key}"
        body = json.dumps({"data": [{"id": args.served_model_name}]} if ok else {"error": "Unauthorized"}).encode()
        self.send_response(200 if ok else 401); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
print(f"Starting vLLM server on http://127.0.0.1:{args.port}", flush=True)
http.server.HTTPServer(("127.0.0.1", args.port), H).serve_forever()
"""


def test_env_a_stray_key_file_that_the_server_takes_is_named_by_the_refused_key(tmp_path):
    build, port = make_build(tmp_path / "keyed")
    (build / "launch_vllm.py").write_text(KEYED_STANDIN)  # serve.sh runs it as it runs the launcher (`up --force`)
    stray = tmp_path / "stray-key"
    stray.write_text("sk-another-deployments-key\n")
    stray.chmod(0o600)
    try:
        env_ = {"TQ_API_KEY_FILE": str(stray)}
        rc, up, out = tq("up", str(build), "--json", "--force", extra_env=env_, timeout=180)
        assert rc == 1 and up["status"] == "failed", out[-2000:]
        refused = next(f for f in up["findings"] if f["id"] == "TQ468")
        assert refused["evidence"]["env_overrides"] == {"TQ_API_KEY_FILE": str(stray)}
        assert f"TQ_API_KEY_FILE={stray}" in refused["remediation"]
        assert "sk-another" not in out
        assert_nothing_left(build, up["pgid"], port)
    finally:
        kill_leftovers(build)
