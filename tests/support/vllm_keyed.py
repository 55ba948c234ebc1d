"""A real CPU vLLM that requires an API key, as a tqdeploy deployment runs it, for the connect/nginx tests.

Like serve.sh: the key is read from a file into VLLM_API_KEY (never argv), the served name is the
tiny-cpu-demo spec's ("tiny"). The model is a copy of the tiny checkpoint (tokenizer with a chat template,
tests/support/make_tiny_model.py) whose config allows a long context, so one stream can run for minutes;
the weights are symlinked, only config.json differs. The KV budget is fixed and small
(--kv-cache-memory-bytes, honoured by the CPU platform: vllm/platforms/cpu.py).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from support.vllm_server import (
    CACHE,
    START_TIMEOUT_S,
    VLLM_PYTHON,
    VllmServer,
    _healthy,
    free_port,
    stop_server,
    tiny_model_dir,
)

SERVED_NAME = "tiny"
LONG_CONTEXT = 131072  # room for a stream of well over a minute even on a fast idle machine
KV_BYTES = 256 << 20  # 1 KiB per token for this model (2 layers x 2 KV heads x 64 x K,V x bf16): 2x the context


@dataclass
class KeyedServer:
    server: VllmServer
    key_file: Path

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def key(self) -> str:
        return self.key_file.read_text(encoding="utf-8").strip()


def long_context_model_dir() -> Path:
    """The tiny checkpoint with max_position_embeddings raised (weights symlinked; made once per checkout)."""
    src, out = tiny_model_dir(), CACHE / f"tiny-qwen2-ctx{LONG_CONTEXT}"
    if (out / ".complete").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.name not in ("config.json", ".complete") and not (out / f.name).exists():
            (out / f.name).symlink_to(f.resolve())
    config = json.loads((src / "config.json").read_text())
    config["max_position_embeddings"] = LONG_CONTEXT
    (out / "config.json").write_text(json.dumps(config, indent=2))
    (out / ".complete").write_text("ok\n")
    return out


def start_keyed_server(workdir: Path, extra_args: list[str] = ()) -> KeyedServer:
    workdir.mkdir(parents=True, exist_ok=True)
    key_file = workdir / "vllm-api-key"
    key_file.write_text("sk-test-" + secrets.token_hex(12) + "\n", encoding="utf-8")
    key_file.chmod(0o600)
    port = free_port()
    args = [
        str(VLLM_PYTHON),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(long_context_model_dir()),
        "--served-model-name",
        SERVED_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        str(LONG_CONTEXT),
        "--dtype",
        "bfloat16",
        "--kv-cache-memory-bytes",
        str(KV_BYTES),
        *extra_args,
    ]
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_API_KEY=key_file.read_text().strip())
    env.setdefault("VLLM_CACHE_ROOT", str(CACHE / "vllm"))
    log_path = workdir / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    server = VllmServer(long_context_model_dir(), f"http://127.0.0.1:{port}", port, args, log_path, proc)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM exited with {proc.returncode} during start-up:\n{server.log_text[-3000:]}")
        if _healthy(server.base_url):
            return KeyedServer(server, key_file)
        time.sleep(1)
    stop_server(server)
    raise RuntimeError(f"vLLM not healthy after {START_TIMEOUT_S} s:\n{server.log_text[-3000:]}")
