"""A tune from end to end: the candidates, the fingerprint, what a re-run reuses, the estimate shown before any
start, one candidate at a time (measure.py), the verdict, the chart and --apply. Progress goes to stderr, one
line per step; the result is the one output object (report.py)."""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdeploy.buildfolder import folder, own_dir
from tqdeploy.deployspec import Spec
from tqdeploy.errors import TQError
from tqdeploy.findings import Finding
from tqdeploy.fsutil import atomic_write_text
from tqdeploy.model import ModelFacts, load_model_facts
from tqdeploy.output import dumps
from tqdeploy.runtime.deployment import Deployment, load_deployment
from tqdeploy.runtime.procs import deployment_procs
from tqdeploy.runtime.state import deployment_marker
from tqdeploy.tune import store, variant
from tqdeploy.tune.apply import apply
from tqdeploy.tune.candidates import candidates
from tqdeploy.tune.chart import write_chart
from tqdeploy.tune.goodput import Targets, num
from tqdeploy.tune.measure import measure
from tqdeploy.tune.report import TuneResult
from tqdeploy.tune.verdict import Row, recommended, verdict
from tqdeploy.tune.workload import DEFAULT_START_S, Workload, check_workload, estimate_s

REFERENCE_NAME = "answers-reference.json"


@dataclass(frozen=True)
class Options:
    workload: Workload
    targets: Targets
    dtypes: list[str] | None = None
    check_budget_s: float = 60.0
    fresh: bool = False  # measure every candidate again, whatever is stored
    chart: bool = True
    apply: bool = False


def say(text: str) -> None:
    print(f"tune: {text}", file=sys.stderr, flush=True)


def context_for(spec: Spec, context: int | None) -> int:
    """Sequences are counted at --context, else at the build's max_model_len (the longest a request may be)."""
    longest = spec.vllm.max_model_len
    if context is None:
        if longest is None:
            raise TQError("the build sets no vllm.max_model_len: tune cannot tell the context", "pass --context TOKENS")
        return int(longest)
    if longest is not None and context > longest:
        raise TQError(f"--context {context} exceeds the build's max_model_len {longest}", f"e.g. --context {longest}")
    if context < 1:
        raise TQError(f"--context {context} is not a token count", "e.g. --context 4096")
    return context


def tune(build: Path, opts: Options) -> TuneResult:
    started = time.monotonic()
    build = Path(build).resolve()
    dep = load_deployment(build)
    refuse_running(build)
    workload = opts.workload
    check_workload(workload)
    fp = store.fingerprint(dep, workload.to_dict())
    result = TuneResult(str(build), workload.to_dict(), opts.targets, store.digest(fp))
    spec = dep.spec
    rows = [
        Row(c.dtype, excluded=c.excluded) for c in candidates(spec.variant, spec.vllm_version, _facts(dep), opts.dtypes)
    ]
    todo: list[Row] = []
    for row in rows:
        if row.excluded:
            continue
        stored, why = (None, "--fresh") if opts.fresh else store.load(build, row.dtype, fp)
        if stored is not None:
            row.result, row.reused = stored, True
        else:
            todo.append(row)
            say(f"{row.dtype}: to measure ({why})")
    starts = [s for s in (num(r.result.get("start_s")) for r in rows if r.result) if s]
    start_s = statistics.median(starts) if starts else DEFAULT_START_S  # this build's own, once measured
    result.estimate_s = estimate_s(len(todo), workload, start_s, opts.check_budget_s * 2)
    if todo:
        say(
            f"{len(todo)} dtype(s) to measure, one at a time: about {result.estimate_s / 60:.1f} min "
            f"({start_s:.0f} s a start, {len(workload.sweep)} steps of at most {workload.step_s:g} s, the check); "
            "Ctrl-C stops cleanly and keeps what was measured"
        )
    tune_dir = own_dir(build, folder(build).state_dir / "tune")
    for i, row in enumerate(todo, 1):
        say(f"[{i}/{len(todo)}] {row.dtype}: starting through `tqdeploy up`")
        _measure_one(build, row, opts, fp, tune_dir / REFERENCE_NAME)
    result.rows = rows
    context = workload.context
    result.findings = [*_kv_findings(rows), *verdict(rows, opts.targets, context)]
    if opts.chart:
        path = write_chart(tune_dir / "tune.png", rows, context)
        result.chart = str(path) if path else None
    if opts.apply:
        choice = recommended(result.findings)
        if choice is None:
            result.applied = {"dtype": None, "summary": "nothing applied: no dtype is recommended"}
        else:
            result.applied = apply(build, choice)
    result.seconds = time.monotonic() - started
    _keep(tune_dir, result)
    return result


def refuse_running(build: Path) -> None:
    """Each copy takes the build's own memory share (gpu_memory_utilization, or RAM on the CPU build): beside the
    running build it would fail in vLLM's memory profiling, or measure a host the build is already loading."""
    running = deployment_procs(deployment_marker(build))
    if running:
        raise TQError(
            f"{build} is running ({len(running)} processes): tune starts each candidate with the same memory share",
            f"stop it first (`tqdeploy down {build}`), tune, then start it again",
        )


def _measure_one(build: Path, row: Row, opts: Options, fp: dict[str, Any], reference: Path) -> None:
    try:
        row.result = measure(
            build, row.dtype, opts.workload, reference=reference, check_budget_s=opts.check_budget_s, say=say
        )
    except variant.StartFailed as failed:
        row.failed = f"did not start: {failed.why}"
        say(f"{row.dtype}: {row.failed}")
        return
    except TQError as err:  # its /metrics, log, key or up.log could not be read or written: this candidate only
        row.failed = f"not measured: {err.message}"
        say(f"{row.dtype}: {row.failed}")
        return
    store.save(build, row.dtype, fp, row.result)
    say(f"{row.dtype}: done in {row.result['seconds']:.0f} s")


def _facts(dep: Deployment) -> ModelFacts | None:
    try:
        return load_model_facts(str(dep.model_dir))
    except (TQError, OSError, ValueError):
        return None  # the presets' model rules are skipped; `up` reports what the model refuses


def _kv_findings(rows: list[Row]) -> list[Finding]:
    """Each measured dtype's KV findings (TQ430 TurboQuant not in effect, TQ431 real against the plan)."""
    out: list[Finding] = []
    for row in rows:
        for f in ((row.result or {}).get("kv") or {}).get("findings") or []:
            try:
                finding = Finding.from_dict(f)
            except (KeyError, ValueError, TypeError):
                continue
            finding.title = f"{row.dtype}: {finding.title}"
            out.append(finding)
    return out


def _keep(tune_dir: Path, result: TuneResult) -> None:
    atomic_write_text(tune_dir / "tune.json", dumps(result.to_dict()) + "\n")
