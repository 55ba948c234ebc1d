"""The three ways to profile: a saved log, a running server (optionally with its log), and a start
through `tqdeploy up` (start.py). Each returns a ProfileResult; the command writes and shows it."""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from tqdeploy.buildfolder import read_lock
from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.model import ModelFacts, load_model_facts
from tqdeploy.net import KEY_REFUSED_ID, Client
from tqdeploy.plan.vllmlog import parse_kv_log
from tqdeploy.profile.accelerators import apply_disk, measure_direct_read, measure_residency, startup_plan_finding
from tqdeploy.profile.chart import write_chart
from tqdeploy.profile.events import Event
from tqdeploy.profile.failed import failed_start
from tqdeploy.profile.jsontypes import JSONObject
from tqdeploy.profile.kvcheck import kv_figures
from tqdeploy.profile.load import LoadSpec, run_step, warm_up
from tqdeploy.profile.report import ProfileResult
from tqdeploy.profile.sampler import MetricsSampler
from tqdeploy.profile.server import cache_config as read_cache_config
from tqdeploy.profile.server import load_model, make_client
from tqdeploy.profile.timeline import build_timeline
from tqdeploy.runtime.state import read_record
from tqdeploy.safeio import read_bytes


@dataclass
class Inputs:
    log: Path | None = None
    url: str | None = None
    model: str | None = None  # checkpoint folder for the planner
    load: LoadSpec | None = None
    out: Path | None = None
    chart: bool = True
    key_file: Path | None = None  # the deployment's API key file (--api-key-file, or the build's own)
    build_dir: Path | None = None  # the build the log is of, for the failed-start finding's remedy


LOG_TAIL = 64 << 20  # a start's log is a few MiB; a larger file is read from its last 64 MiB


def _read_log(path: Path) -> str:
    """The log, bounded (its tail) and refused when it is a FIFO, device or folder (safeio): the path is the
    user's own (--log) or the build's, so a link is followed."""
    try:
        raw = read_bytes(path, LOG_TAIL, "--log", tail=True, follow_symlinks=True)
    except TQError as err:
        raise TQError(err.message, "pass the path of a vLLM log file") from None
    return raw.decode("utf-8", errors="replace")


def _facts(model: str | None, log_text: str) -> ModelFacts | None:
    if model is None:  # the log's own --model, when that folder is on this machine
        try:
            candidate = parse_kv_log(log_text).args.get("model")
        except ValueError:
            candidate = None
        if not candidate or not Path(str(candidate), "config.json").is_file():
            return None
        model = str(candidate)
    return load_model_facts(model)


def _build_release(build_dir: Path | None) -> str | None:
    """The vLLM release the build pins (its lock), whose log wording the timeline reads; None without one."""
    if build_dir is None:
        return None
    try:
        version = read_lock(build_dir).get("pins", {}).get("vllm", {}).get("version")
    except (TQError, AttributeError):
        return None
    return version if isinstance(version, str) and len(version) <= 32 else None


def progress(message: str) -> None:
    print(f"profile: {message}", file=sys.stderr, flush=True)


def profile(
    inputs: Inputs, start: str, extra: list[Event] | None = None, process_start: float | None = None
) -> ProfileResult:
    log_text = _read_log(inputs.log) if inputs.log else ""
    facts = _facts(inputs.model, log_text) if log_text else None
    context: JSONObject = {"log": str(inputs.log) if inputs.log else None, "base_url": None}
    cache_config: JSONObject = {}
    server_findings: list[Finding] = []
    client: Client | None = None
    if inputs.url:
        client = make_client(inputs.url, inputs.key_file)
        context["base_url"] = client.shown_url
        context["api_key"] = "sent" if client.has_key else "none"  # present/absent, never the key
        cache_config, server_findings = read_cache_config(client, inputs.key_file)
        context["cache_config_info"] = cache_config
    timeline = None
    if log_text:
        weight_bytes = facts.weight_bytes if facts else None
        release = _build_release(inputs.build_dir)
        timeline = build_timeline(
            log_text, process_start=process_start, extra=extra, weight_bytes=weight_bytes, release=release
        )
    kv, findings = kv_figures(log_text, cache_config, facts) if log_text else (dict(cache_config), [])
    result = ProfileResult(start, timeline, kv=kv, findings=findings + server_findings, context=context)
    context["answer_check"] = _answer_check(inputs.build_dir)
    if log_text:
        failure = failed_start(log_text, inputs.build_dir)
        result.findings.extend([failure] if failure else [])
        context["start_failed"] = failure is not None
    if inputs.load is not None and client is not None and not _refused(server_findings):
        progress("running the bounded load")
        result.load, load_problems = run_load(client, inputs.load, inputs.key_file)
        result.findings.extend(load_problems)
        if result.load is not None:
            result.findings.extend(load_findings(result.load))
    result.findings.extend(result.timeline_findings())
    if timeline is not None:
        plan = startup_plan_finding(log_text, timeline.phases)
        result.findings.extend([plan] if plan else [])
    if start in ("log", "running") and inputs.model:  # the load is over: the cache state is the one after it
        apply_disk(result, measure_residency(inputs.model), "after the load", measure_direct_read(inputs.model))
    return result


def _answer_check(build_dir: Path | None) -> JSONObject | None:
    """The answer check `up` ran after ready (state.json answer_check, validated by the one state reader)."""
    if build_dir is None:
        return None
    try:
        st = read_record(build_dir)
    except TQError:
        return None  # a corrupt state is `status`'s to report, not profile's
    return st.answer_check if st is not None else None


def _refused(findings: list[Finding]) -> bool:
    return any(f.id == KEY_REFUSED_ID for f in findings)


def run_load(client: Client, spec: LoadSpec, key_file: Path | None = None) -> tuple[JSONObject | None, list[Finding]]:
    """The load's figures, or None and the finding that stopped it before it began (a refused key)."""
    model, problems = load_model(client, key_file, spec)
    if model is None:
        return None, problems
    steps: list[JSONObject] = []
    with MetricsSampler(client, spec.sample_interval_s) as sampler:
        for i, concurrency in enumerate(spec.concurrency):
            progress(f"load step {i + 1}/{len(spec.concurrency)}: concurrency {concurrency}")
            warm = warm_up(client, model, spec, concurrency, seed=i)
            start = sampler.elapsed_s()
            step = run_step(client, model, spec, concurrency, seed=i)
            step["window_s"] = [round(start, 3), round(sampler.elapsed_s(), 3)]
            if warm is not None:
                step["warmup"] = warm
            steps.append(step)
    for step in steps:  # the scrapes that fell inside each step: what its gauges (KV usage, running) rest on
        lo, hi = step["window_s"]
        step["samples"] = sum(1 for s in sampler.samples if lo <= s["t_s"] <= hi)
    load = {
        "spec": dataclasses.asdict(spec),  # every LoadSpec field, in its order
        "steps": steps,
        "server": sampler.server_side(),
        "samples": sampler.samples,
    }
    return load, []


# fewer scrapes than this inside a step and its gauges are a guess (the H200 run's 32-way step lasted ~1 s at 1 s)
MIN_STEP_SAMPLES = 3


def load_findings(load: JSONObject) -> list[Finding]:
    out: list[Finding] = []
    preempted = load["server"].get("preemptions") or 0
    if preempted > 0:
        out.append(
            Finding(
                "TQ434",
                Severity.WARN,
                f"vLLM preempted {preempted:g} requests under this load: the KV cache ran out",
                {"preemptions": preempted, "kv_usage_max": load["server"].get("kv_usage_max")},
                "lower --max-num-seqs, raise the KV budget, or use a smaller --kv-cache-dtype (tqdeploy plan)",
                "kv cache",
            )
        )
    sparse = [s for s in load["steps"] if s.get("samples") is not None and s["samples"] < MIN_STEP_SAMPLES]
    if sparse:
        interval = load["spec"]["sample_interval_s"]
        out.append(
            Finding(
                "TQ438",
                Severity.WARN,
                f"{len(sparse)} load step(s) saw fewer than {MIN_STEP_SAMPLES} /metrics scrapes: their KV usage and "
                "running/waiting figures are not measured",
                {
                    "steps": [
                        {"concurrency": s["concurrency"], "seconds": s["seconds"], "samples": s["samples"]}
                        for s in sparse
                    ],
                    "sample_interval_s": interval,
                },
                f"make each step last at least {MIN_STEP_SAMPLES} scrape intervals: more --requests, a --duration, "
                f"or a shorter --sample-interval (now {interval:g} s)",
                "load",
            )
        )
    errors = sum(s["errors"] for s in load["steps"])
    if errors:
        first = next(s["first_error"] for s in load["steps"] if s["errors"])
        out.append(
            Finding(
                "TQ435",
                Severity.ERROR,
                f"{errors} load requests failed",
                {"errors": errors, "first_error": first},
                "read the server log at the failure time (tqdeploy logs BUILD)",
                "load",
            )
        )
    return out


def write_outputs(result: ProfileResult, out: Path, chart: bool) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    if chart:
        samples = result.load.get("samples") if result.load else None
        result.chart = str(write_chart(out / "profile.png", result.timeline, samples))
    path = out / "profile.json"
    path.write_text(json.dumps(result.to_dict(), indent=2, sort_keys=True, default=str) + "\n")
    return path
