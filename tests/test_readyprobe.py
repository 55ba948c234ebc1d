"""The rendered readiness probe (readyprobe.py: compose's healthcheck, the Kubernetes readinessProbe) run for real:
against the keyed CPU vLLM (passes with the key, fails without it or with another, fails on a dead port) and against
a loopback stand-in that shows what it sends (one bounded completion, the key as a Bearer header) and that an
answer without a completion is not ready."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from support.vllm_server import free_port, vllm_server, write_key_file  # noqa: F401  (session fixture)


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> Path:
    """readyprobe.py as `tqdeploy build` renders it for the keyed CPU demo."""
    from tqdeploy.cli import main

    out = tmp_path_factory.mktemp("build") / "b"
    assert main(["build", "--embedded", "tiny-cpu-demo", "--out", str(out)]) == 0
    return out / "readyprobe.py"


def run_probe(probe: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin"}  # no TQ_API_KEY_FILE from the caller: the arguments decide
    return subprocess.run([sys.executable, str(probe), *args], capture_output=True, text=True, timeout=timeout, env=env)


def _spec(probe: Path) -> dict:
    import tomllib

    return tomllib.loads((probe.parent / "tqdeploy.toml").read_text())


def test_rendered_probe_defaults_are_the_build_s(probe):
    text, spec = probe.read_text(), _spec(probe)
    assert f"default={spec['server']['port']}" in text and f'default="{spec["model"]["served_name"]}"' in text
    assert '"/run/secrets/vllm-api-key"' in text and '"max_tokens": 1' in text


def test_probe_against_the_keyed_cpu_vllm(probe, vllm_server, tmp_path):  # noqa: F811
    model = ["--port", str(vllm_server.port), "--model", str(vllm_server.model_dir)]
    ok = run_probe(probe, *model, "--key-file", str(vllm_server.key_file))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == "" and ok.stderr == ""
    unkeyed = run_probe(probe, *model, "--key-file", "")
    assert unkeyed.returncode == 1 and "HTTP 401" in unkeyed.stderr
    other = run_probe(probe, *model, "--key-file", str(write_key_file(tmp_path / "other-key")))
    assert other.returncode == 1 and "HTTP 401" in other.stderr
    for result in (ok, unkeyed, other):
        assert vllm_server.key not in result.stdout + result.stderr
    missing = run_probe(probe, *model, "--key-file", str(tmp_path / "absent"))
    assert missing.returncode == 1 and "API key file" in missing.stderr
    dead = run_probe(probe, "--port", str(free_port()), "--key-file", str(vllm_server.key_file), timeout=20)
    assert dead.returncode == 1 and "not ready" in dead.stderr and "refused" in dead.stderr.lower()


class _StandIn(BaseHTTPRequestHandler):
    answer = b'{"choices": [{"text": " world"}]}'
    seen: list[dict] = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.answer)))
        self.end_headers()
        self.wfile.write(self.answer)

    def log_message(self, *args):
        pass


@pytest.fixture
def stand_in():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _StandIn.seen = []
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_probe_sends_one_bounded_completion_with_the_key(probe, stand_in, tmp_path):
    key = write_key_file(tmp_path / "key")
    port = str(stand_in.server_address[1])
    assert run_probe(probe, "--port", port, "--key-file", str(key)).returncode == 0
    [seen] = _StandIn.seen
    assert seen["path"] == "/v1/completions" and seen["auth"] == "Bearer " + key.read_text().strip()
    assert seen["body"]["model"] == _spec(probe)["model"]["served_name"]
    assert seen["body"]["max_tokens"] == 1 and seen["body"]["temperature"] == 0
    _StandIn.answer = b'{"object": "error", "message": "engine dead"}'  # 200 without a completion: not ready
    try:
        res = run_probe(probe, "--port", port, "--key-file", str(key))
    finally:
        _StandIn.answer = b'{"choices": [{"text": " world"}]}'
    assert res.returncode == 1 and "no completion" in res.stderr
    assert run_probe(probe, "--port", port, "--timeout", "0").returncode == 1  # bounds are checked
    fifo = tmp_path / "fifo-key"
    os.mkfifo(fifo)  # would block a plain open() until the probe's own timeout
    res = run_probe(probe, "--port", port, "--key-file", str(fifo), timeout=10)
    assert res.returncode == 1 and "not a regular file" in res.stderr
    link = tmp_path / "linked-key"
    link.symlink_to(key)  # as a Kubernetes Secret volume mounts it
    assert run_probe(probe, "--port", port, "--key-file", str(link)).returncode == 0
