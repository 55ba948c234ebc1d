"""One candidate measured: started through the build's runtime (variant.py), its real KV cache read from
/metrics and its log (profile/kvcheck.py against the planner), the concurrency sweep run with profile's bounded
load (profile/load.py), its answers checked against the unquantized reference (answers/run.py), then stopped.

The result is plain JSON (store.py keeps it with the fingerprint): figures only, the verdict is computed from
them at report time, so a re-run with other targets reuses the measurements.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdeploy.answers import target as targets
from tqdeploy.answers.record import record_from_server
from tqdeploy.answers.run import run_check
from tqdeploy.answers.thresholds import load_thresholds
from tqdeploy.errors import TQError
from tqdeploy.fsutil import atomic_write_text
from tqdeploy.model import load_model_facts
from tqdeploy.net import Client
from tqdeploy.profile.kvcheck import kv_figures
from tqdeploy.profile.load import LoadSpec, run_step
from tqdeploy.profile.server import cache_config, make_client
from tqdeploy.runtime.deployment import load_deployment
from tqdeploy.safeio import read_text
from tqdeploy.tune import variant
from tqdeploy.tune.workload import Workload, steps_for

LOG_LIMIT = 8 << 20  # vLLM's start-up log: the KV lines are near its start, the tail is what is kept
STEP_KEYS = (
    "concurrency",
    "requests",
    "completed",
    "cut_at_duration",
    "errors",
    "first_error",
    "seconds",
    "ttft_p50_s",
    "ttft_p99_s",
    "itl_p50_s",
    "itl_p99_s",
    "output_tokens_per_s",
)


def measure(
    build: Path,
    dtype: str,
    workload: Workload,
    *,
    reference: Path,
    check_budget_s: float,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Start, measure, stop. variant.StartFailed when the copy does not start (the caller's row says why)."""
    t0 = time.monotonic()
    copy = variant.prepare(build, dtype)
    log = variant.variant_dir(build, dtype) / "up.log"
    started = variant.start(build, copy, log)
    try:
        say(f"{dtype}: ready in {time.monotonic() - t0:.0f} s at {started.base_url}")
        # start_s: tune's whole start (the copy's build, up, ready); ready_s: up's own figure for vLLM's start
        record: dict[str, Any] = {"dtype": dtype, "start_s": round(time.monotonic() - t0, 2)}
        record["ready_s"] = started.seconds_to_ready
        record["kv"] = capacity(copy, started, workload.context)
        holds = record["kv"].get("holds")
        record["steps"] = []
        for i, c in enumerate(steps_for(workload, holds)):
            say(f"{dtype}: concurrency {c} ({workload.requests} requests or {workload.step_s:g} s)")
            record["steps"].append(one_step(copy, started, workload, c, i))
        say(f"{dtype}: checking the answers")
        t_check = time.monotonic()
        record["quality"] = quality(copy, dtype, reference, dtype == "auto", check_budget_s)
        record["check_s"] = round(time.monotonic() - t_check, 2)
    finally:
        variant.stop(copy)
    record["seconds"] = round(time.monotonic() - t0, 2)
    return record


def _client(copy: Path, started: variant.Started) -> Client:
    return make_client(started.base_url, load_deployment(copy).api_key_file, label="the candidate's base_url")


def capacity(copy: Path, started: variant.Started, context: int) -> dict[str, Any]:
    """Real KV tokens (vllm:cache_config_info, else the log), the plan's figure, and the sequences of `context`
    tokens they hold; TQ430 (a TurboQuant dtype not in effect) and TQ431 (plan against real) come along."""
    dep = load_deployment(copy)
    figures, findings = cache_config(_client(copy, started), dep.api_key_file)
    text = read_text(started.log_path, LOG_LIMIT, "the vLLM log", tail=True) if started.log_path else ""
    try:
        facts = load_model_facts(str(dep.model_dir))
    except Exception:  # noqa: BLE001  the plan's figure is extra evidence; the real count stands without it
        facts = None
    kv, kv_findings = kv_figures(text, figures or None, facts)
    real = kv.get("real_tokens")
    holds = real // context if isinstance(real, int) and real > 0 else None
    keep = ("cache_dtype", "real_tokens", "planned_tokens", "bytes_per_token_real", "kv_memory_gib", "note")
    out = {k: kv.get(k) for k in keep if kv.get(k) is not None} | {"context": context, "holds": holds}
    out["findings"] = [f.to_dict() for f in [*findings, *kv_findings]]
    return out


def one_step(copy: Path, started: variant.Started, workload: Workload, concurrency: int, seed: int) -> dict[str, Any]:
    spec = LoadSpec(
        [concurrency],
        workload.prompt_tokens,
        workload.output_tokens,
        max(workload.requests, concurrency),  # every stream of the step busy at least once
        workload.step_s,
    )
    step = run_step(_client(copy, started), started.model, spec, concurrency, seed=seed)
    return {k: step.get(k) for k in STEP_KEYS}


def quality(copy: Path, dtype: str, reference: Path, record: bool, budget_s: float) -> dict[str, Any]:
    """`tqdeploy check` of the running candidate, with `reference` (tune's own, recorded by the auto candidate)
    as the build's own reference: check uses it when its fingerprint is this server's, else a shipped one, else
    the absolute ceiling (answers/run.py choose_reference). With `record` (the auto candidate: its KV cache is
    the unquantized one), its answers are recorded there first."""
    target = targets.for_build(copy, None, None, None)
    target.own_reference = reference
    out: dict[str, Any] = {}
    if record:
        try:
            ref = record_from_server(target, budget=budget_s)
            atomic_write_text(reference, json.dumps(ref.to_dict(), indent=2, sort_keys=True) + "\n")
        except TQError as err:
            out["reference_error"] = err.message
    result = run_check(target, budget=budget_s)
    obs, ref_used = result.observed, result.reference
    ppl = obs.perplexity if obs else None
    floor = load_thresholds().ratio_for(dtype)
    out |= {
        "status": "pass" if result.passed else "fail",
        "perplexity": ppl,
        "reference": ref_used.source if ref_used else None,
        "reference_perplexity": ref_used.perplexity if ref_used else None,
        "ratio": round(ppl / ref_used.perplexity, 4) if ppl and ref_used and ref_used.perplexity else None,
        "floor": floor.value,
        "floor_source": floor.source,
        "findings": [f.to_dict() for f in result.findings if f.severity.value in ("error", "warn")][:10],
    }
    return out
