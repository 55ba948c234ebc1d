"""The vLLM start-up log lines that end each start-up phase, in the order vLLM prints them.

Every pattern was checked against vLLM 0.32.0's source (the CPU venv) and the recorded 0.25.0 H200 logs
(tests/fixtures/vllm-logs); the logger call that prints each line is cited beside it. Versions word some
lines differently ("takes"/"took", "GiB and"/"GiB memory and"): every variant seen is accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Milestone:
    key: str  # names the event
    phase: str  # the phase that ends at this line
    pattern: re.Pattern
    duration_group: int | None = None  # group holding the phase length vLLM itself reports (seconds)


def _m(key: str, phase: str, regex: str, duration_group: int | None = None) -> Milestone:
    return Milestone(key, phase, re.compile(regex), duration_group)


MILESTONES: tuple[Milestone, ...] = (
    # entrypoints/serve/utils/api_utils.py log_non_default_args: logger.info("non-default args: %s", ...)
    _m("args", "imports + argument parsing", r"non-default args: "),
    # v1/engine/core.py EngineCore.__init__: "Initializing a V1 LLM engine (v%s) with config: %s"
    _m("engine", "config + engine process start", r"Initializing a V1 LLM engine"),
    # v1/worker/gpu_model_runner.py load_model and cpu_model_runner.py load_model: "Starting to load model %s...";
    # 0.25's V2 runner (v1/worker/gpu/model_runner.py load_model): "Loading model from scratch..."
    _m("load_start", "worker start", r"Starting to load model|Loading model from scratch"),
    # model_executor/model_loader/default_loader.py load_weights: "Loading weights took %.2f seconds"
    _m("weights", "weights loaded", r"Loading weights took ([\d.]+) seconds", 1),
    # --load-format runai_streamer prints no "Loading weights took" line: its tqdm bar ends the load
    # (model_executor/model_loader/weight_utils.py runai_safetensors_weights_iterator,
    # desc="Loading safetensors using Runai Model Streamer")
    _m("weights_stream", "weights loaded", r"Loading safetensors using Runai Model Streamer: 100% Completed"),
    # v1/worker/gpu_model_runner.py load_model: "Model loading took %s GiB memory and %.6f seconds" (0.32);
    # 0.25 printed "Model loading took 0.18 GiB and 2.463387 seconds"
    _m("model_loaded", "weights loaded", r"Model loading took ([\d.]+) GiB(?: memory)? and ([\d.]+) seconds", 2),
    # compilation/monitor.py monitor_torch_compile: "%storch.compile took %.2f s in total" ("takes" in older
    # releases); on the CPU build no total is printed: compilation/decorators.py prints "%ssaved AOT compiled
    # function to %s" after a compile and "%sDirectly load AOT compilation from path %s" on a cache hit
    _m(
        "compile",
        "torch.compile",
        r"torch\.compile (?:takes|took) ([\d.]+) s in total|saved AOT compiled function|Directly load AOT compilation",
        1,
    ),
    # v1/worker/cpu_model_runner.py warming_up_model: "Warming up model for the compilation..." then the
    # compiling profile run, then "Warming up done.": on the CPU build with VLLM_USE_AOT_COMPILE=0 (which
    # tqdeploy renders there, spec/accel.py) no other line marks the compile's end
    _m("cpu_warmup", "torch.compile", r"Warming up done\."),
    # compilation/monitor.py monitor_profiling_run: "%sInitial profiling/warmup run took %.2f s"
    _m("profile_run", "memory profiling", r"Initial profiling/warmup run took ([\d.]+) s"),
    # v1/worker/gpu_worker.py determine_available_memory: "Available KV cache memory: %s GiB";
    # v1/worker/cpu_worker.py determine_available_memory: "Auto set (...) GiB for KV cache" / "Explicitly set"
    # with a startup plan applied (or --kv-cache-memory) 0.32.0 prints instead: "Initial free memory %s GiB, reserved
    # %s GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. ..."
    _m(
        "kv_memory",
        "memory profiling",
        r"Available KV cache memory: |(?:Auto|Explicitly) set \([\d.]+/[\d.]+\) GiB"
        r"|GiB memory for KV Cache as specified by kv_cache_memory_bytes config",
    ),
    # v1/core/kv_cache_utils.py get_kv_cache_configs: "%s KV cache size: %s tokens, Maximum concurrency ..."
    _m("kv_size", "KV cache allocation", r"KV cache size: [\d,]+ tokens"),
    # model_executor/warmup/kernel_warmup.py (FlashInfer autotune, CuTeDSL): seen in the 0.25 H200 logs
    _m(
        "kernels", "kernel warm-up (autotune)", r"Autotuning process ends|Skipping CuTeDSL warmup|CuTeDSL compile_units"
    ),
    # v1/worker/gpu_model_runner.py capture_model: "Graph capturing finished in %.0f secs, took %.2f GiB"
    _m("graphs", "CUDA graph capture", r"Graph capturing finished in (\d+) secs", 1),
    # 0.25.0 utils/jit_monitor.py activate: "Kernel JIT monitor activated; ...", called at the end of
    # v1/worker/gpu_worker.py compile_or_warm_up_model, after warmup_kernels, the dummy sampler run and inductor's
    # lazy init, which print nothing: on the H200 (tests/fixtures/gpu-runs/h200-vllm-0.25.0) 93.7 s cold, 8.1 s warm
    _m("post_capture", "post-capture warm-up (silent)", r"Kernel JIT monitor activated"),
    # v1/engine/core.py _initialize_kv_caches: "init engine (profile, create kv cache, warmup model) took %.2f s"
    _m("engine_ready", "engine warm-up", r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s"),
    # entrypoints/launchers/api_server/entry.py: "Starting vLLM server on %s" (older: "Starting vLLM API server")
    _m("api_listen", "API server start", r"Starting vLLM (?:API )?server"),
    # uvicorn's own start-up line (no vLLM timestamp in a raw log)
    _m("app_ready", "API app start-up", r"Application startup complete\."),
    # uvicorn access log of the first successful health check
    _m("health", "first /health 200", r'"GET /health HTTP/1\.[01]" 200'),
    # uvicorn access log of the first answered completion (sent when the response starts)
    _m("first_response", "first request answered", r'"POST /v1/(?:chat/)?completions HTTP/1\.[01]" 200'),
)

# "(APIServer pid=6655) INFO 11-29 09:40:53 [api_utils.py:347] ..." (vllm/logger.py _FORMAT: one-second
# resolution, no year)
VLLM_CLOCK = re.compile(r"(?:^|\) )(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) ")
# flashinfer's logger inside the engine: "2026-11-29 10:12:18,654 - INFO - ..."
FULL_CLOCK = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d),(\d{3}) - ")
# torch.compile cache: hit and miss lines (compilation/backends.py, compilation/decorators.py)
COMPILE_HIT = re.compile(r"Directly load the compiled graph|Directly load AOT compilation")
COMPILE_MISS = re.compile(r"Compiling a graph for|saved AOT compiled function")
COMPILE_LOAD_FAILED = re.compile(r"Compiling model again due to a load failure")
EAGER = re.compile(r"Enforce eager set|enforce_eager=True")
MODEL_GIB = re.compile(r"Model loading took ([\d.]+) GiB")
CHECKPOINT_GIB = re.compile(r"Checkpoint size: ([\d.]+) GiB")
# startup plan (VLLM_ENABLE_STARTUP_PLAN=1), vLLM 0.32.0 v1/worker/startup_plan.py: maybe_apply_startup_plan
# "Applying persisted startup plan (fingerprint %s): ...", _applicable_kv_cache_memory_bytes "Startup plan not applied:
# current free memory (%.2f GiB) is below the recorded baseline ...", maybe_save_startup_plan "Saved startup plan to %s"
PLAN_APPLIED = re.compile(r"Applying persisted startup plan \(fingerprint ")
PLAN_NOT_APPLIED = re.compile(r"Startup plan not applied: current free memory")
PLAN_SAVED = re.compile(r"Saved startup plan to ")
# the vLLM version: entrypoints/serve/utils/api_utils.py log_version_and_model prints "vLLM server version %s, serving
# model %s" or a logo with "version %s" (ANSI colours around it on a terminal; the 0.25.0 H200 logs show the logo);
# releases up to ~0.10 printed "vLLM API server version %s"; v1/engine/core.py "Initializing a V1 LLM engine (v%s)"
_ANSI = r"(?:\x1b\[[\d;]*m)*"
VLLM_VERSION = re.compile(
    r"vLLM (?:API )?server version (\d+\.\d+\.\d+)"
    rf"|\u2588{_ANSI}  version {_ANSI}(\d+\.\d+\.\d+)"
    r"|Initializing a V1 LLM engine \(v(\d+\.\d+\.\d+)"
)
# a start on a CUDA GPU: config/vllm.py VllmConfig.__str__ "device_config=%s" in the engine's config line, or CUDA
# graph capture (gpu_model_runner.py "Graph capturing finished", the tqdm bar "Capturing CUDA graphs")
GPU_START = re.compile(r"device_config=cuda\b|Graph capturing finished in|Capturing CUDA graphs")
