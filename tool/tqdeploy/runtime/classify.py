"""Why a start failed, read from vLLM's own messages in its log: one TQ4xx finding with evidence and the fix.

Each signature's pattern is in tqdeploy.vllmfacts.logpatterns, beside where vLLM prints it (vllm/ of 0.32.0
unless noted). The most specific match wins;
"engine core died" and a bare exit code are the fallbacks when vLLM said nothing more precise.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tqdeploy.findings import Finding, Severity
from tqdeploy.runtime.exitreason import ExitReason, last_reason
from tqdeploy.runtime.kvhint import fitting_dtypes
from tqdeploy.vllmfacts import logpatterns as logs
from tqdeploy.vllmfacts.logpatterns import KV_ESTIMATE_FIGURE, KV_NEED_FIGURES, NO_CACHE_MEMORY

AREA = "runtime"


@dataclass
class StartContext:
    """What the classifier may quote in a remedy."""

    build_dir: str
    port: int | None = None
    host: str = "127.0.0.1"
    max_model_len: int | None = None
    kv_cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    model_dir: str | None = None
    vllm_version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _error(id_: str, title: str, evidence: dict[str, Any], remediation: str) -> Finding:
    return Finding(id_, Severity.ERROR, title, evidence, remediation, AREA)


def _plan_hint(ctx: StartContext, max_len: int | None, fits: list[tuple[str, int]]) -> str:
    model = ctx.model_dir or "MODEL"
    plan = f"`tqdeploy plan --model {model} --max-model-len {ctx.max_model_len or 'N'}` shows the KV tokens per dtype"
    fit = f"set vllm.max_model_len = {max_len}" if max_len else "lower vllm.max_model_len"
    if fits:
        dtype, tokens = fits[0]
        keep = f'or keep it with kv_cache_dtype = "{dtype}" ({tokens:,} KV tokens in the same memory)'
    elif (ctx.kv_cache_dtype or "").startswith("turboquant"):
        keep = "or make room"
    else:
        keep = "or try a TurboQuant kv_cache_dtype"
    return (
        f"{fit} in tqdeploy.toml, {keep}, or raise gpu_memory_utilization ({plan}); "
        "then `tqdeploy build` and `tqdeploy up` again"
    )


# (id, pattern, builder(match, line, ctx) -> (title, evidence, remediation))
Built = tuple[str, dict[str, Any], str]
Builder = Callable[[re.Match[str], str, "StartContext"], Built]


def _port(m: re.Match[str], line: str, ctx: StartContext) -> Built:
    return (
        f"port {ctx.port} on {ctx.host} is already in use",
        {"port": ctx.port, "line": line},
        f"stop what listens on {ctx.host}:{ctx.port} (`ss -ltnp 'sport = :{ctx.port}'`) or set server.port "
        "in tqdeploy.toml and build again",
    )


def _count(text: str) -> int | None:
    """A count from a log line, None when it is not one a real vLLM prints (5000 digits, say)."""
    return int(text) if len(text) <= 18 else None


def _gib(text: str) -> float | None:
    """GiB from a log line, None for what no vLLM prints ("1.2.3", a 400-digit figure)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value < 1e9 else None


def _kv_small(m: re.Match[str], line: str, ctx: StartContext) -> Built:
    est = KV_ESTIMATE_FIGURE.search(line)
    max_len = _count(est.group(1)) if est else None
    need = KV_NEED_FIGURES.search(line)
    evidence: dict[str, Any] = {"max_model_len": ctx.max_model_len, "estimated_max_model_len": max_len}
    fits: list[tuple[str, int]] = []
    needed, available = (_gib(need.group(1)), _gib(need.group(2))) if need else (None, None)
    if needed is not None and available is not None:
        evidence |= {"kv_needed_gib": needed, "kv_available_gib": available}
        if ctx.model_dir and ctx.max_model_len:
            fits = fitting_dtypes(ctx.model_dir, available, ctx.max_model_len, ctx.vllm_version, ctx.kv_cache_dtype)
            evidence["fits_with"] = dict(fits)
    if NO_CACHE_MEMORY in line:
        evidence["line"] = line
        return ("no memory left for the KV cache after the weights", evidence, _plan_hint(ctx, None, []))
    return (f"KV cache too small for max-model-len {ctx.max_model_len}", evidence, _plan_hint(ctx, max_len, fits))


def _free_memory(m: re.Match[str], line: str, ctx: StartContext) -> Built:
    return (
        "free memory at start-up is below gpu_memory_utilization",
        {"gpu_memory_utilization": ctx.gpu_memory_utilization, "line": line},
        "stop the processes holding GPU memory (`tqdeploy status` / `nvidia-smi` list them) or lower "
        "vllm.gpu_memory_utilization in tqdeploy.toml (on the CPU build it is the share of RAM), then build again",
    )


def _profiling_race(m: re.Match[str], line: str, ctx: StartContext) -> Built:
    """vLLM's memory profiling saw free GPU memory grow (gpu_worker.py determine_available_memory): another process
    on the GPU released memory meanwhile, as a second vLLM starting beside it does (measured on the H200)."""
    initial, current = _gib(m.group(1)), _gib(m.group(2))
    return (
        "another process on the GPU released memory while vLLM profiled its own: two servers started on one GPU "
        "at once",
        {"initial_free_gib": initial, "current_free_gib": current, "line": line},
        "start servers on one GPU one at a time: wait until the other answers GET /health with 200 (on the H200, "
        "starts 35 s apart worked), then `tqdeploy up` again; or give each server its own GPU (resources.gpus)",
    )


def _backend(m: re.Match[str], line: str, ctx: StartContext) -> Built:
    """TQ406; vLLM 0.25.0's "Unknown TurboQuant cache dtype: 'auto'" has two measured causes, each with its fix."""
    if "Unknown TurboQuant cache dtype: 'auto'" in line:
        return (
            "TurboQuant was asked for the KV shape of a layer without a TurboQuant dtype",
            {"line": line},
            "vLLM 0.25.0 fails so with speculative decoding (TQ321: drop --speculative-config from extra_args, or "
            'use kv_cache_dtype = "fp8") and on hybrid models (vLLM issue #50709: kv_cache_dtype = "fp8", or '
            "a release that computes TurboQuant shapes per layer); then build again",
        )
    return (
        "the KV-cache dtype or attention backend is not supported here",
        {"line": line},
        "pick a kv_cache_dtype this platform and model support (`tqdeploy doctor --kv-cache-dtype ...` and "
        "`tqdeploy plan` list them), drop --attention-backend from extra_args, then build again",
    )


def _simple(title: str, remediation: str) -> Builder:
    def build(m: re.Match[str], line: str, ctx: StartContext) -> Built:
        return title, {"line": line}, remediation.format(ctx=ctx)

    return build


SIGNATURES: list[tuple[str, re.Pattern[str], Builder]] = [
    ("TQ401", logs.PORT_IN_USE, _port),
    ("TQ402", logs.KV_TOO_SMALL, _kv_small),
    ("TQ403", logs.FREE_MEMORY_LOW, _free_memory),
    ("TQ426", logs.MEMORY_PROFILING_RACE, _profiling_race),
    (
        "TQ404",
        logs.CUDA_OOM,
        _simple(
            "CUDA out of memory during start-up",
            "lower vllm.gpu_memory_utilization, max_num_seqs or max_model_len (or add --enforce-eager to skip CUDA "
            "graphs) in tqdeploy.toml, free the GPU, then build and up again",
        ),
    ),
    (
        "TQ405",
        logs.FLAG_REJECTED,
        _simple(
            "vLLM rejected a command-line flag",
            "fix vllm.extra_args in tqdeploy.toml (`tqdeploy lint --file {ctx.build_dir}/serve.sh` checks the flags "
            "against this vLLM's parser), then `tqdeploy build` again",
        ),
    ),
    ("TQ406", logs.BACKEND_UNSUPPORTED, _backend),
    (
        "TQ424",
        logs.NO_VLLM,
        _simple(
            "the python serve.sh ran has no vLLM",
            "pass --python with the interpreter that has vLLM (e.g. .venv-vllm/bin/python) or set "
            "TQDEPLOY_VLLM_PYTHON; a vLLM installed elsewhere needs its PYTHONPATH",
        ),
    ),
]


def classify_log(lines: list[str], ctx: StartContext) -> Finding | None:
    """The first specific signature found in the log (earliest line), else None."""
    for line in lines:
        for id_, pattern, build in SIGNATURES:
            m = pattern.search(line)
            if m:
                title, evidence, remediation = build(m, line.strip(), ctx)
                if "line" in evidence:
                    evidence["line"] = evidence["line"][-400:]
                return _error(id_, title, evidence, remediation)
    return None


def root_cause(lines: list[str]) -> str | None:
    for line in reversed(lines):
        m = logs.EXCEPTION_LINE.match(line.strip())  # the root cause when nothing more specific matched
        if m and "died unexpectedly" not in line:
            return f"{m.group(1)}: {m.group(2)}"[:400]
    return None


def _said(said: ExitReason, ctx: StartContext, log_hint: str) -> Finding:
    """A start the rendered scripts ended on purpose: the finding is what their reason line says."""
    evidence = {"exit_code": said.code, "reason": said.reason, "said": f"{said.script}: {said.message}"}
    if said.reason == "model-missing":
        return _error(
            "TQ412",
            "the model is missing where serve.sh expects it",
            evidence,
            f"run {ctx.build_dir}/download.sh (or `tqdeploy download`), or point TQ_MODEL_DIR at it",
        )
    if said.reason == "key-file":
        return _error(
            "TQ413",
            f"the API key file was refused: {said.message}",
            evidence,
            "write the key (one line of printable ASCII, no spaces) into the file server.api_key_file names",
        )
    return _error(
        "TQ427",
        f"{said.script} refused to start vLLM ({said.reason}): {said.message}",
        evidence,
        f"do what the log's `fix:` line below it says; {log_hint}",
    )


def classify_exit(lines: list[str], exit_code: int | None, ctx: StartContext) -> Finding:
    """A start that ended with the process gone: the most specific finding for it."""
    specific = classify_log(lines, ctx)
    if specific is not None:
        specific.evidence["exit_code"] = exit_code
        return specific
    cause = root_cause(lines)
    engine_died = any(logs.ENGINE_DIED.search(line) for line in lines)
    log_hint = f"read {ctx.build_dir}/.tqdeploy/logs/server.log (`tqdeploy logs {ctx.build_dir}`)"
    said = last_reason(lines)
    if said is not None and said.code == exit_code:
        return _said(said, ctx, log_hint)
    if exit_code is not None and exit_code < 0:
        name = signal.Signals(-exit_code).name if -exit_code in signal.Signals._value2member_map_ else str(-exit_code)
        evidence = {"signal": name, "exit_code": exit_code}
        oom = "; SIGKILL with no stop request is most often the kernel's OOM killer (`dmesg | grep -i oom`)"
        return _error(
            "TQ408",
            f"vLLM was killed by {name} during start-up",
            evidence,
            "give the host more memory or lower vllm.gpu_memory_utilization / max_num_seqs" + oom
            if name == "SIGKILL"
            else f"find what sent {name}; {log_hint}",
        )
    if engine_died:
        evidence = {"exit_code": exit_code, "root_cause": cause}
        return _error(
            "TQ407",
            "the engine core process died during start-up",
            evidence,
            f"fix the root cause the log shows above the engine failure; {log_hint}",
        )
    if exit_code == 0:  # vllm#48966: the server can exit 0 after its engine died
        return _error(
            "TQ411",
            "vLLM exited with code 0 before it was ready",
            {"exit_code": 0, "root_cause": cause},
            f"an exit 0 during start-up is a failure (vLLM issue #48966); {log_hint}",
        )
    return _error(
        "TQ419",
        f"vLLM exited with code {exit_code} during start-up",
        {"exit_code": exit_code, "root_cause": cause},
        log_hint,
    )
