"""A runtime that is one module of the tests: it serves /health and /v1/models from a small HTTP server on loopback.

tests/test_runtime_registry.py and the bundle's tests register it with one line (registry.RUNTIMES["dummy"] = ...)
and run `up`, `status`, `down` and the bundle's runtime collector through it in-process. It inherits runtime/base.py's
defaults and writes what differs: its server is its own keeper (its own session, the deployment marker in its
environment, each line stamped into the log as the supervisor does), status gets one extra key, a bundle its keeper.
The runtime in docs/architecture.md ("Add a runtime", tests/test_runtime_recipe.py) is the one-folder variant.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdeploy.runtime import procs, state
from tqdeploy.runtime.base import Prepared, RuntimeBase, RuntimeFacts, Started
from tqdeploy.runtime.deployment import Deployment
from tqdeploy.runtime.detached import keeper_env, spawn_detached
from tqdeploy.runtime.marker import Trusted
from tqdeploy.runtime.record import StateRecord

SERVER = r"""
import http.server, json, sys, time
from tqdeploy.runtime.logstamp import stamp
log_path, host, port, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def say(text):
    with open(log_path, "a") as log:
        log.write(stamp(text, time.time()) + "\n")
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path not in ("/health", "/v1/models"):
            self.send_response(404); self.end_headers(); return
        body = b"" if self.path == "/health" else json.dumps({"data": [{"id": name}]}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
server = http.server.HTTPServer((host, port), H)
say(f"Starting vLLM server on http://{host}:{port}")
server.serve_forever()
"""


class DummyRuntime(RuntimeBase):
    name = "dummy"

    def start(self, dep: Deployment, prepared: Prepared, log_path: Path) -> Started:
        argv = [sys.executable, "-c", SERVER, str(log_path), dep.connect_host, str(dep.port), dep.served_model_name]
        keeper = spawn_detached(argv, keeper_env(dep.build_dir), log_path.with_suffix(".err"))
        return Started.detached(keeper, pid=keeper.pid)  # the server is its own keeper

    def facts(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> RuntimeFacts:
        members = procs.deployment_procs(trusted.marker, trusted.started_at)
        return RuntimeFacts(bool(members), members, {"dummy": {"keeper": record.supervisor_pid}})

    def inspect(self, build_dir: Path, record: StateRecord, secret: Callable[[str], str]) -> dict[str, Any]:
        """Its keeper as the state records it, and whether that pid is the deployment's own right now."""
        marker = state.deployment_marker(build_dir)
        own = procs.owned(record.supervisor_pid, marker, record.started_at)
        return {"dummy/keeper.json": {"supervisor_pid": record.supervisor_pid, "port": record.port, "live": own}}
