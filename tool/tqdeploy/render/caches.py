"""Every cache a vLLM start writes, and the variable that moves it onto the cache volume: one table for serve.sh
(every variant and runtime: compose, Kubernetes, the process and docker runtimes all run it) and for `profile`.

serve.sh derives each from VLLM_CACHE_ROOT (the process runtime points it at BUILD/.tqdeploy/cache/vllm, the image
at /cache/vllm), so a recreated container or pod finds them all on its volume. Each is kept when the environment
already sets it (`${VAR:-default}`). None of these names is in the torch.compile cache key: vLLM 0.25.0's and
0.32.0's vllm/envs.py `compile_factors()` hashes only the names of its own `environment_variables` table.
Sources (docs/facts.md has the lines): Triton 3.9.0 triton/knobs.py; torch 2.13.0
torch/_inductor/runtime/cache_dir_utils.py; FlashInfer v0.6.13 flashinfer/jit/env.py (the release vLLM 0.25.0
pins); nvidia-cutlass-dsl v4.5.2 cutlass/base_dsl/cache_helpers.py (vLLM 0.25.0 pins 4.5.2); the CUDA
Programming Guide's environment variables (CUDA_CACHE_PATH); vLLM 0.25.0 vllm/envs.py (XDG_CACHE_HOME).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StartCache:
    key: str  # profile's name for it
    title: str
    env: str  # the variable serve.sh sets ("" = none: vLLM's own under VLLM_CACHE_ROOT, or not movable)
    subdir: str  # under VLLM_CACHE_ROOT ("" = not on the volume: no variable moves it)
    default: str  # where it lands without the variable ($HOME, $TMPDIR, $USER expanded by profile)
    source: str


# Order: serve.sh renders them in this order.
START_CACHES: tuple[StartCache, ...] = (
    StartCache(
        "compile",
        "torch.compile cache (vLLM)",
        "",
        "torch_compile_cache",
        "$VLLM_CACHE_ROOT/torch_compile_cache",
        "vllm/compilation/backends.py",
    ),
    StartCache(
        "aot",
        "AOT-compiled model (vLLM, inside the compile cache)",
        "",
        "torch_compile_cache/torch_aot_compile",
        "$VLLM_CACHE_ROOT/torch_compile_cache/torch_aot_compile",
        "vllm/compilation/decorators.py",
    ),
    StartCache(
        "flashinfer_autotune",
        "FlashInfer autotune results (vLLM)",
        "",
        "flashinfer_autotune_cache",
        "$VLLM_CACHE_ROOT/flashinfer_autotune_cache",
        "vllm/model_executor/warmup/flashinfer_autotune_cache.py",
    ),
    StartCache(
        "triton",
        "Triton kernel cache",
        "TRITON_CACHE_DIR",
        "triton",
        "$HOME/.triton/cache",
        "triton/knobs.py (TRITON_CACHE_DIR, default TRITON_HOME/.triton/cache)",
    ),
    StartCache(
        "inductor",
        "TorchInductor cache",
        "TORCHINDUCTOR_CACHE_DIR",
        "torchinductor",
        "$TMPDIR/torchinductor_$USER",
        "torch/_inductor/runtime/cache_dir_utils.py (default_cache_dir)",
    ),
    # No variable moves it: torch writes its C++ precompiled headers under default_cache_dir(), which ignores
    # TORCHINDUCTOR_CACHE_DIR on purpose ("these headers need to be global"); only TMPDIR moves it, and TMPDIR also
    # holds vLLM's IPC sockets, so serve.sh leaves it. Seen on the CPU demo (147 MB); profile reports it.
    StartCache(
        "inductor_pch",
        "TorchInductor precompiled C++ headers",
        "",
        "",
        "$TMPDIR/torchinductor_$USER/precompiled_headers",
        "torch/_inductor/codecache.py (_HEADER_DIR = default_cache_dir()/precompiled_headers)",
    ),
    StartCache(
        "flashinfer_jit",
        "FlashInfer JIT workspace and cubins",
        "FLASHINFER_WORKSPACE_BASE",
        "flashinfer",
        "$HOME/.cache/flashinfer",
        "flashinfer/jit/env.py (FLASHINFER_WORKSPACE_BASE/.cache/flashinfer)",
    ),
    StartCache(
        "cuda_compute",
        "CUDA driver JIT cache (ComputeCache)",
        "CUDA_CACHE_PATH",
        "nv-compute-cache",
        "$HOME/.nv/ComputeCache",
        "CUDA Programming Guide, CUDA environment variables (CUDA_CACHE_PATH)",
    ),
    StartCache(
        "cute_dsl",
        "CuTe DSL kernel cache",
        "CUTE_DSL_CACHE_DIR",
        "cute-dsl",
        "$TMPDIR/$USER/cutlass_python_cache",
        "cutlass/base_dsl/cache_helpers.py (CUTE_DSL_CACHE_DIR)",
    ),
    StartCache(
        "xdg",
        "other ~/.cache users (XDG_CACHE_HOME)",
        "XDG_CACHE_HOME",
        "xdg",
        "$HOME/.cache",
        "XDG base directories; vllm/envs.py get_default_cache_root",
    ),
)

# Written on the volume by warmup.sh once a start is ready; `profile` compares it with the lock's fingerprint.
FINGERPRINT_FILE = "tqdeploy-fingerprint.json"
FINGERPRINT_SCHEMA = "tqdeploy.cache-fingerprint/1"


def moved_caches() -> list[StartCache]:
    """The caches serve.sh moves with a variable (the rest are vLLM's own, already under VLLM_CACHE_ROOT)."""
    return [c for c in START_CACHES if c.env]
