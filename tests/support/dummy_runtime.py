"""A runtime that is one module: it serves /health and /v1/models from a small HTTP server on loopback.

tests/test_runtime_registry.py registers it with one line (registry.RUNTIMES["dummy"] = ...) and runs
`up`, `status` and `down` through it. It implements runtime/base.py's interface and nothing else: the
server is its keeper (its own session, the deployment marker in its environment, each line stamped into
the log as the supervisor does), so the common machinery (readiness, the marker sweep, the port check)
works on it unchanged.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tqdeploy.runtime import procs, state
from tqdeploy.runtime.base import Prepared, RuntimeFacts, Started, StartOptions, StopRequest
from tqdeploy.runtime.stop import StopReport, stop_deployment

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


class DummyRuntime:
    name = "dummy"
    start_options: frozenset[str] = frozenset()

    def prepare(self, dep, options: StartOptions) -> Prepared:
        return Prepared()

    def start(self, dep, prepared: Prepared, log_path: Path) -> Started:
        import os

        env = dict(os.environ, **{state.MARKER_ENV: state.deployment_marker(dep.build_dir)})
        env["PYTHONPATH"] = str(Path(state.__file__).resolve().parents[2])
        argv = [sys.executable, "-c", SERVER, str(log_path), dep.connect_host, str(dep.port), dep.served_model_name]
        keeper = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        return Started(keeper, keeper.pid, {"pid": keeper.pid})

    def stop(self, request: StopRequest) -> StopReport:
        r = request.record
        return stop_deployment(
            request.build_dir,
            r.pgid,
            request.grace,
            server_pid=r.pid,
            host=request.host,
            port=request.port,
            gpu_baseline=request.gpu_baseline,
            trusted=request.trusted,
        )

    def is_live(self, build_dir: Path, record, trusted) -> bool:
        return procs.owned(record.supervisor_pid, trusted.marker, trusted.started_at)

    def facts(self, build_dir: Path, record, trusted) -> RuntimeFacts:
        members = procs.deployment_procs(trusted.marker, trusted.started_at)
        return RuntimeFacts(bool(members), members, {"dummy": True})

    def inspect(self, build_dir: Path, record, secret) -> dict:
        """Its keeper as the state records it, and whether that pid is the deployment's own right now."""
        marker = state.deployment_marker(build_dir)
        own = procs.owned(record.supervisor_pid, marker, record.started_at)
        return {"dummy/keeper.json": {"supervisor_pid": record.supervisor_pid, "port": record.port, "live": own}}

    def logs(self, build_dir: Path) -> Path:
        return state.current_log(build_dir)

    @classmethod
    def adopts(cls, build_dir: Path) -> bool:
        return False
