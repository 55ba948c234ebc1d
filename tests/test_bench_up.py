"""The measuring helpers of the up benchmark (bench/up.py) on real local things: an HTTP server on
127.0.0.1 answering like vLLM's /health and /v1/models, a real process group holding a port, /proc start
times. No timing asserts: only that each helper sees what it claims to see."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench import up as bench_up


class _Vllmish(BaseHTTPRequestHandler):
    models: list[str] = []
    health = 200
    key: str | None = None  # set: /v1 answers 401 without `Authorization: Bearer KEY`, as vLLM with --api-key

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/health":
            code, body = self.health, b""
        elif self.path.startswith("/v1") and self.key and self.headers.get("Authorization") != f"Bearer {self.key}":
            code, body = 401, b'{"error": "Unauthorized"}'
        elif self.path == "/v1/models":
            code, body = 200, json.dumps({"object": "list", "data": [{"id": m} for m in self.models]}).encode()
        else:
            code, body = 404, b""
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Vllmish.models, _Vllmish.health, _Vllmish.key = [], 503, None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Vllmish)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_ready_needs_health_200_and_the_served_model_listed(server):
    assert not bench_up.is_ready(server, "tiny")  # 503: loading
    _Vllmish.health = 200
    assert not bench_up.is_ready(server, "tiny")  # up, but the model is not listed yet
    _Vllmish.models = ["other"]
    assert not bench_up.is_ready(server, "tiny")
    _Vllmish.models = ["tiny"]
    assert bench_up.is_ready(server, "tiny")
    assert not bench_up.is_ready(f"http://127.0.0.1:{bench_up.free_port()}", "tiny")  # nothing listens
    _Vllmish.key = "sk-bench"  # the demo is keyed: the by-hand poll must send the build's key
    assert not bench_up.is_ready(server, "tiny") and not bench_up.is_ready(server, "tiny", "sk-wrong")
    assert bench_up.is_ready(server, "tiny", "sk-bench")


def test_poll_ready_returns_when_ready_and_gives_up_when_the_server_is_gone(server):
    threading.Timer(0.5, lambda: setattr(_Vllmish, "models", ["tiny"]) or setattr(_Vllmish, "health", 200)).start()
    t0 = time.monotonic()
    ready_at = bench_up.poll_ready(server, "tiny", 30)
    assert ready_at is not None and ready_at >= t0
    _Vllmish.health = 503
    assert bench_up.poll_ready(server, "tiny", 30, gone=lambda: True) is None
    assert bench_up.poll_ready(server, "tiny", 0.3) is None


def test_seconds_until_gone_waits_for_the_whole_group_and_the_port(tmp_path):
    # A group leader and a child; the child holds a listening port and outlives the leader by ~1 s.
    port = bench_up.free_port()
    child = (
        "import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
        f"s.bind(('127.0.0.1', {port})); s.listen(); time.sleep(600)"
    )
    script = f'{sys.executable} -c "{child}" & sleep 600'
    proc = subprocess.Popen(["sh", "-c", script], cwd=tmp_path, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while bench_up.port_free(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not bench_up.port_free(port)
        assert bench_up.seconds_until_gone(time.monotonic(), tmp_path, proc.pid, port, timeout=0.5) == float("inf")
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
        gone = bench_up.seconds_until_gone(t0, tmp_path, proc.pid, port, timeout=30)
        assert gone != float("inf") and bench_up.port_free(port)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_boottime_started_is_when_the_process_was_forked():
    before = time.clock_gettime(time.CLOCK_BOOTTIME)
    proc = subprocess.Popen(["sleep", "30"])
    try:
        started = bench_up.boottime_started(proc.pid)
        tick = 1 / os.sysconf("SC_CLK_TCK")
        assert before - tick <= started <= time.clock_gettime(time.CLOCK_BOOTTIME) + tick
    finally:
        proc.kill()
        proc.wait()


def test_the_benchmark_is_found_by_make_bench():
    import pkgutil

    import bench as pkg

    assert "up" in {m.name for m in pkgutil.iter_modules(pkg.__path__)}
    import inspect

    from tqdeploy.commands.down import down

    # the goal's grace period is what `tqdeploy down` waits by default before SIGKILL
    assert inspect.signature(down).parameters["grace_period"].default.default == bench_up.GRACE_S
    with socket.socket() as s:  # free_port hands out a port nobody listens on
        assert s.connect_ex(("127.0.0.1", bench_up.free_port())) != 0
