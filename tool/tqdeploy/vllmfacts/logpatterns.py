"""vLLM's log lines, one table: what each start-up phase, milestone, failure and KV figure looks like in its log.

Read by runtime/phases.py (the phase `up` shows), profile/ (the start-up timeline), runtime/classify.py (why a
start failed: TQ4xx) and plan/vllmlog.py (the KV figures, for calibration). Every pattern was checked against
vLLM 0.32.0's source (the CPU venv) and the recorded 0.25.0 H200 logs (tests/fixtures/vllm-logs); the logger call
that prints each line is cited beside it.

Per release (issue 22): every pattern was run against the recorded logs of both releases (0.25.0: the H200 logs in
tests/fixtures/vllm-logs/h200-vllm-0.25.0 and gpu-runs/h200-vllm-0.25.0; 0.32.0: the CPU build's in
tests/fixtures/vllm-logs/cpu-vllm-0.32.0 and up/), and each line one release printed was compared with the other
release's logger call (tests/test_vllmfacts_logpatterns.py runs them all). One line is worded differently:
the V2 model runner's "Model loading took %s GiB and %.6f seconds" in 0.25.0 (v1/worker/gpu/model_runner.py, printed
as [model_runner.py:302] in dense-cold.log) is "... GiB memory and ..." in 0.32.0 (gpu/model_runner.py:425), as
the V1 runner says it in both (gpu_model_runner.py: 0.25.0 line 5306 in q36like-*.log, 0.32.0 line 5150). That
milestone is keyed by release (MODEL_LOADED, `milestones(release)`: the caller names the build's release, or the
one the log names). The other differences leave every pattern matching in both: 0.25.0 prints "GPU KV cache
size: N tokens" and "Maximum concurrency ..." as two lines (kv_cache_utils.py:2146-2147), 0.32.0 as one
(kv_cache_utils.py:2327), and the readers look at the same and the next line; 0.32.0 puts a "[backbone] " prefix
before the compile monitor's lines; "init engine ... took %.2f s" gains " (compilation: %.2f s)" in 0.25.0; the
CuTeDSL skip line gives another reason after "Skipping CuTeDSL warmup". Variants neither release prints
("torch.compile takes", "Starting vLLM API server": older releases) stay accepted.

The messages several readers match are written once (the constants below); each reader's pattern is built from
them, so a rewording in a new vLLM release is one edit here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

# -- messages that more than one reader matches (regex text), each beside the vLLM source that prints it --
# v1/worker/gpu_model_runner.py load_model and cpu_model_runner.py load_model: "Starting to load model %s..."
LOAD_START = r"Starting to load model"
# model_executor/model_loader/default_loader.py load_weights: "Loading weights took %.2f seconds"
WEIGHTS_TOOK = r"Loading weights took"
# v1/worker/gpu_model_runner.py load_model: "Model loading took %s GiB memory and %.6f seconds" (0.32);
# 0.25 printed "Model loading took 0.18 GiB and 2.463387 seconds"
MODEL_LOADING_TOOK = r"Model loading took"
# compilation/backends.py: "%sDirectly load the compiled graph(s) for compile range %s from the cache, took %.3f s";
# compilation/decorators.py (the CPU build's AOT path): "%sDirectly load AOT compilation from path %s"
COMPILE_CACHE_HIT = r"Directly load the compiled graph|Directly load AOT compilation"
# compilation/decorators.py: "%ssaved AOT compiled function to %s" after a compile
AOT_SAVED = r"saved AOT compiled function"
# compilation/backends.py: "Compiling a graph for compile range %s takes %.2f s"
COMPILING_GRAPH = r"Compiling a graph"
# v1/worker/cpu_model_runner.py warming_up_model: "Warming up model for the compilation..."
CPU_WARMUP_START = r"Warming up model for the compilation"
# v1/worker/gpu_worker.py determine_available_memory: "Available KV cache memory: %s GiB"
KV_AVAILABLE = r"Available KV cache memory"
# v1/core/kv_cache_utils.py get_kv_cache_configs: "%s KV cache size: %s tokens" (GPU, CPU, ...)
KV_SIZE = r"KV cache size: "
# v1/worker/gpu_model_runner.py capture_model: the tqdm bar "Capturing CUDA graphs (...)" and the summary
# "Graph capturing finished in %.0f secs, took %.2f GiB"
CAPTURING_GRAPHS = r"Capturing CUDA graphs"
GRAPHS_DONE = r"Graph capturing finished"
# v1/engine/core.py _initialize_kv_caches: "init engine (profile, create kv cache, warmup model) took %.2f s"
ENGINE_INIT = r"init engine \(profile"
# entrypoints/launchers/api_server/entry.py: "Starting vLLM server on %s" (older: "Starting vLLM API server")
API_LISTEN = r"Starting vLLM (?:API )?server"
# uvicorn's own start-up line (no vLLM timestamp in a raw log)
APP_READY = r"Application startup complete"
# entrypoints/serve/utils/api_utils.py log_non_default_args: logger.info("non-default args: %s", ...)
NON_DEFAULT_ARGS = r"non-default args: "
# v1/worker/cpu_worker.py determine_available_memory: "Auto set (<kv GiB>/<total GiB>) GiB for KV cache on node N."
# or "Explicitly set (...)" (with --kv-cache-memory-bytes or VLLM_CPU_KVCACHE_SPACE)
CPU_KV_SET = r"(?:Auto|Explicitly) set \("

# -- start-up phases (runtime/phases.py): (phase, pattern), the first match wins --
PHASE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # model_executor/model_loader/weight_utils.py: the tqdm bar "Loading safetensors checkpoint shards"
    ("weights", re.compile(rf"{LOAD_START}|{WEIGHTS_TOOK}|Loading safetensors checkpoint")),
    # compilation/backends.py "%sDynamo bytecode transform time: %.2f s", compilation/monitor.py "%storch.compile
    # took %.2f s in total" ("takes" in older releases);
    # CPU: cpu_model_runner.py "Warming up model"
    (
        "compile",
        re.compile(
            rf"Dynamo bytecode transform|torch\.compile take|torch\.compile took|{COMPILING_GRAPH}"
            rf"|{COMPILE_CACHE_HIT}|{CPU_WARMUP_START}|{MODEL_LOADING_TOOK}"
        ),
    ),
    # v1/worker/gpu_worker.py, cpu_worker.py ("set (...) GiB for KV cache"), v1/core/kv_cache_utils.py
    ("kv_cache", re.compile(rf"{KV_AVAILABLE}|{KV_SIZE}|set \([\d.]+/[\d.]+\) GiB for KV cache")),
    # v1/worker/gpu_model_runner.py (tqdm bar, "Profiling CUDA graph memory", summary)
    ("cuda_graphs", re.compile(rf"{CAPTURING_GRAPHS}|Profiling CUDA graph memory|{GRAPHS_DONE}")),
    ("api_server", re.compile(rf"{ENGINE_INIT}|{API_LISTEN}|{APP_READY}")),
)


# -- lines two releases word differently: each release's pattern, beside the vLLM source that prints it --
# The weights' load summary (the "model_loaded" milestone; groups: GiB, seconds).
MODEL_LOADED: dict[str, str] = {
    # 0.25.0 v1/worker/gpu/model_runner.py load_model (the V2 runner): "Model loading took %s GiB and %.6f seconds"
    # ([model_runner.py:302] in tests/fixtures/vllm-logs/h200-vllm-0.25.0/dense-cold.log); its V1 runner,
    # v1/worker/gpu_model_runner.py load_model: "... %s GiB memory and %.6f seconds" (line 5306, q36like-*.log)
    "0.25.0": rf"{MODEL_LOADING_TOOK} ([\d.]+) GiB(?: memory)? and ([\d.]+) seconds",
    # 0.32.0: both runners print "Model loading took %s GiB memory and %.6f seconds" (v1/worker/gpu/model_runner.py
    # load_model line 425, v1/worker/gpu_model_runner.py load_model line 5150)
    "0.32.0": rf"{MODEL_LOADING_TOOK} ([\d.]+) GiB memory and ([\d.]+) seconds",
}
# A release without an entry (or none named): every wording above
MODEL_LOADED_ANY = rf"{MODEL_LOADING_TOOK} ([\d.]+) GiB(?: memory)? and ([\d.]+) seconds"


# -- start-up milestones (profile/): the lines that end each start-up phase, in the order vLLM prints them --
@dataclass(frozen=True)
class Milestone:
    key: str  # names the event
    phase: str  # the phase that ends at this line
    pattern: re.Pattern[str]
    duration_group: int | None = None  # group holding the phase length vLLM itself reports (seconds)


def _m(key: str, phase: str, regex: str, duration_group: int | None = None) -> Milestone:
    return Milestone(key, phase, re.compile(regex), duration_group)


_MILESTONES: tuple[Milestone, ...] = (  # read through milestones(release)
    _m("args", "imports + argument parsing", NON_DEFAULT_ARGS),
    # v1/engine/core.py EngineCore.__init__: "Initializing a V1 LLM engine (v%s) with config: %s"
    _m("engine", "config + engine process start", r"Initializing a V1 LLM engine"),
    # 0.25's V2 runner (v1/worker/gpu/model_runner.py load_model): "Loading model from scratch..."
    _m("load_start", "worker start", rf"{LOAD_START}|Loading model from scratch"),
    _m("weights", "weights loaded", rf"{WEIGHTS_TOOK} ([\d.]+) seconds", 1),
    # --load-format runai_streamer prints no "Loading weights took" line: its tqdm bar ends the load
    # (model_executor/model_loader/weight_utils.py runai_safetensors_weights_iterator,
    # desc="Loading safetensors using Runai Model Streamer")
    _m("weights_stream", "weights loaded", r"Loading safetensors using Runai Model Streamer: 100% Completed"),
    _m("model_loaded", "weights loaded", MODEL_LOADED_ANY, 2),  # worded per release: MODEL_LOADED, milestones()
    # compilation/monitor.py monitor_torch_compile: "%storch.compile took %.2f s in total" ("takes" in older
    # releases); on the CPU build no total is printed: compilation/decorators.py prints "%ssaved AOT compiled
    # function to %s" after a compile and "%sDirectly load AOT compilation from path %s" on a cache hit
    _m(
        "compile",
        "torch.compile",
        rf"torch\.compile (?:takes|took) ([\d.]+) s in total|{AOT_SAVED}|Directly load AOT compilation",
        1,
    ),
    # v1/worker/cpu_model_runner.py warming_up_model: "Warming up model for the compilation..." then the
    # compiling profile run, then "Warming up done.": on the CPU build with VLLM_USE_AOT_COMPILE=0 (which
    # tqdeploy renders there, deployspec/accel.py) no other line marks the compile's end
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
        rf"{KV_AVAILABLE}: |{CPU_KV_SET}[\d.]+/[\d.]+\) GiB"
        r"|GiB memory for KV Cache as specified by kv_cache_memory_bytes config",
    ),
    # v1/core/kv_cache_utils.py get_kv_cache_configs: "%s KV cache size: %s tokens, Maximum concurrency ..."
    _m("kv_size", "KV cache allocation", rf"{KV_SIZE}[\d,]+ tokens"),
    # model_executor/warmup/kernel_warmup.py (FlashInfer autotune, CuTeDSL): seen in the 0.25 H200 logs
    _m(
        "kernels", "kernel warm-up (autotune)", r"Autotuning process ends|Skipping CuTeDSL warmup|CuTeDSL compile_units"
    ),
    _m("graphs", "CUDA graph capture", rf"{GRAPHS_DONE} in (\d+) secs", 1),
    # 0.25.0 utils/jit_monitor.py activate: "Kernel JIT monitor activated; ...", called at the end of
    # v1/worker/gpu_worker.py compile_or_warm_up_model, after warmup_kernels, the dummy sampler run and inductor's
    # lazy init, which print nothing: on the H200 (tests/fixtures/gpu-runs/h200-vllm-0.25.0) 93.7 s cold, 8.1 s warm
    _m("post_capture", "post-capture warm-up (silent)", r"Kernel JIT monitor activated"),
    _m("engine_ready", "engine warm-up", rf"{ENGINE_INIT}, create kv cache, warmup model\) took ([\d.]+) s"),
    _m("api_listen", "API server start", API_LISTEN),
    _m("app_ready", "API app start-up", rf"{APP_READY}\."),
    # uvicorn access log of the first successful health check
    _m("health", "first /health 200", r'"GET /health HTTP/1\.[01]" 200'),
    # uvicorn access log of the first answered completion (sent when the response starts)
    _m("first_response", "first request answered", r'"POST /v1/(?:chat/)?completions HTTP/1\.[01]" 200'),
)


@lru_cache(maxsize=16)
def milestones(release: str | None) -> tuple[Milestone, ...]:
    """The milestone table for one vLLM release ("0.32.0": the build's, or the one its log names). A release the
    per-release tables have no entry for, or None, gets every release's wording."""
    version = (release or "").strip().lstrip("v")
    loaded = MODEL_LOADED.get(version, MODEL_LOADED_ANY)
    return tuple(replace(m, pattern=re.compile(loaded)) if m.key == "model_loaded" else m for m in _MILESTONES)


# "(APIServer pid=6655) INFO 11-29 09:40:53 [api_utils.py:347] ..." (vllm/logger.py _FORMAT: one-second
# resolution, no year)
VLLM_CLOCK = re.compile(r"(?:^|\) )(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) ")
# flashinfer's logger inside the engine: "2026-11-29 10:12:18,654 - INFO - ..."
FULL_CLOCK = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d),(\d{3}) - ")
# torch.compile cache: hit and miss lines (compilation/backends.py, compilation/decorators.py)
COMPILE_HIT = re.compile(COMPILE_CACHE_HIT)
COMPILE_MISS = re.compile(rf"{COMPILING_GRAPH} for|{AOT_SAVED}")
COMPILE_LOAD_FAILED = re.compile(r"Compiling model again due to a load failure")
EAGER = re.compile(r"Enforce eager set|enforce_eager=True")
MODEL_GIB = re.compile(rf"{MODEL_LOADING_TOOK} ([\d.]+) GiB")
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
GPU_START = re.compile(rf"device_config=cuda\b|{GRAPHS_DONE} in|{CAPTURING_GRAPHS}")

# -- why a start failed (runtime/classify.py: one TQ4xx finding per signature, the earliest line wins) --
# entrypoints/launchers: 0.32 binds the API socket before the engine starts; older ones after (#7514)
PORT_IN_USE = re.compile(r"\[Errno 98\]|Address already in use")  # TQ401
# v1/core/kv_cache_utils.py _check_enough_kv_cache_memory: "No available memory for the cache blocks. ..." or
# "To serve at least one request with the model's max seq len (%d), (%s GiB KV cache is needed, which is larger
# than the available KV cache memory (%s GiB). Based on the available memory, the estimated maximum model length
# is %d. ..."
KV_MAX_LEN_ESTIMATE = r"estimated maximum model length is"
KV_NEEDED = r"KV cache is needed, which is larger than"
NO_CACHE_MEMORY = r"No available memory for the cache blocks"
KV_TOO_SMALL = re.compile(rf"{KV_MAX_LEN_ESTIMATE}|{KV_NEEDED}|{NO_CACHE_MEMORY}")  # TQ402
KV_ESTIMATE_FIGURE = re.compile(rf"{KV_MAX_LEN_ESTIMATE} (\d+)")
KV_NEED_FIGURES = re.compile(rf"\(([\d.]+) GiB {KV_NEEDED} the available KV cache memory \(([\d.]+)")
# v1/worker/utils.py (GPU), v1/worker/cpu_worker.py (CPU)
FREE_MEMORY_LOW = re.compile(r"on startup is less than desired (?:GPU|CPU) memory utilization")  # TQ403
# torch.OutOfMemoryError, v1/worker/gpu_model_runner.py
CUDA_OOM = re.compile(r"CUDA out of memory|OutOfMemoryError")  # TQ404
# argparse (vllm/utils/argparse_utils.py FlexibleArgumentParser): "<prog>: error: ..."
FLAG_REJECTED = re.compile(r": error: (?:unrecognized arguments|argument |the following arguments)")  # TQ405
# platforms/cuda.py "No valid attention backend found"; v1/attention/backend.py "kv_cache_dtype not
# supported"; 0.25.0 turboquant/config.py "Unknown TurboQuant cache dtype" (hybrids, issue #50709)
BACKEND_UNSUPPORTED = re.compile(  # TQ406
    r"No valid attention backend found|kv_cache_dtype not supported"
    r"|Unknown TurboQuant cache dtype|Invalid attention backend"
)
# v1/worker/gpu_worker.py determine_available_memory asserts that free GPU memory did not grow while it profiled
# (0.25.0 line 511, 0.32.0 line 720): "Error in memory profiling. Initial free memory %s GiB, current free memory
# %s GiB. This happens when other processes sharing the same container release GPU memory while vLLM is profiling
# during initialization. ..." Seen on the H200 (0.25.0) when two servers started on one GPU within seconds.
MEMORY_PROFILING_RACE = re.compile(  # TQ426
    r"Error in memory profiling\. Initial free memory ([\d.]+) GiB, current free memory ([\d.]+) GiB"
)
# CPython's runpy (`python3 -m vllm...` without vLLM): "Error while finding module specification for
# 'vllm.entrypoints.cli.main' (ModuleNotFoundError: No module named 'vllm')", or "No module named vllm"
# for a top-level -m; an import: "ModuleNotFoundError: No module named 'vllm'". Seen on the H200
# (tests/fixtures/gpu-runs/h200-vllm-0.25.0/README.md). 'vllm._C' (a broken build) is not this.
NO_VLLM = re.compile(r"No module named (?:'vllm'|vllm(?![.\w]))")  # TQ424
# v1/engine/utils.py "Engine core initialization failed"; v1/utils.py "Engine core process ... died
# unexpectedly"; v1/executor/multiproc_executor.py "Worker proc ... died unexpectedly"; EngineDeadError
ENGINE_DIED = re.compile(
    r"Engine core initialization failed|died unexpectedly|EngineDeadError|WorkerProc initialization failed"
)
# The last exception line of a traceback, bare or behind a log prefix such as "(EngineCore pid=N) ERROR ... ]"
# (as in tests/fixtures/vllm-logs/h200-vllm-0.25.0/q36like-tq-hybrid-crash.log)
EXCEPTION_LINE = re.compile(r"^(?:\([^)]*\) )?(?:ERROR [^\]]*\] )?\s*([A-Za-z_.]*(?:Error|Exception)): (.+)$")

# -- the KV figures of one start (plan/vllmlog.py; docs/facts.md "vLLM: cold start, logs, metrics") --
KV_MEMORY_GIB = re.compile(rf"{KV_AVAILABLE}: ([\d.]+) GiB")  # GPU
CPU_KV_GIB = re.compile(rf"{CPU_KV_SET}([\d.]+)/[\d.]+\) GiB for KV cache")  # CPU
KV_TOKENS = re.compile(rf"(GPU|CPU|XPU|TPU)[^:\n]* {KV_SIZE}([\d,]+) tokens")
# v1/core/kv_cache_utils.py, on the same or the next line: "Maximum concurrency for %s tokens per request: %.2fx"
MAX_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
# platforms/interface.py: "Setting attention block size to %d tokens"
BLOCK_SIZE = re.compile(r"Setting attention block size to (\d+) tokens")
NON_DEFAULT_ARGS_DICT = re.compile(rf"{NON_DEFAULT_ARGS}(\{{.*\}})")
