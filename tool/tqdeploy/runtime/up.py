"""`up`: pre-flight, start under the supervisor, wait ready, classify a failure and clean up after it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from dataclasses import replace as with_fields
from pathlib import Path
from typing import Any

from rich.console import Console

from tqdeploy.buildfolder import folder
from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.output import render_findings
from tqdeploy.runtime import callerenv, gpu, http, preflight, registry, state
from tqdeploy.runtime.base import Prepared, Runtime, Started, StartOptions, StopRequest
from tqdeploy.runtime.classify import AREA, StartContext
from tqdeploy.runtime.deployment import Deployment, load_deployment
from tqdeploy.runtime.down import down
from tqdeploy.runtime.interrupt import Interrupted, ignored, raising
from tqdeploy.runtime.marker import trust_state, unrecorded
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.replace import SwitchPlan, old_key, plan_switch, switch_and_drain
from tqdeploy.runtime.view import problems, render_answer_check
from tqdeploy.runtime.wait import wait_ready

SCHEMA = "tqdeploy.up/1"
GpuList = list[dict[str, Any]] | None  # runtime.gpu.gpu_memory(): GPU memory before the start, None without NVML


class Unread:
    """running_state's default: no state handed in, read it (None is a state that is not there)."""


UNREAD = Unread()


@dataclass
class UpResult:
    build_dir: str
    runtime: str
    status: str  # ready | check-failed | failed | started | refused | interrupted
    base_url: str | None = None
    served_model_name: str | None = None
    pid: int | None = None
    pgid: int | None = None
    log_path: str | None = None
    seconds_to_ready: float | None = None
    phase: str | None = None
    doctor: str | None = None
    findings: list[Finding] = field(default_factory=list)
    replaced: dict[str, Any] | None = None
    interrupted_by: str | None = None  # SIGINT | SIGTERM
    started: bool = False  # whether this `up` got as far as starting processes
    stopped: list[dict[str, Any]] = field(default_factory=list)  # what an interrupt stopped
    exit_status: int | None = None  # 130 / 143 after an interrupt
    answer_check: dict[str, Any] | None = None  # the answer check's summary after ready (None: not run)

    @property
    def exit_code(self) -> int:
        if self.exit_status is not None:
            return self.exit_status
        return 0 if self.status in ("ready", "started") else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "build_dir": self.build_dir,
            "runtime": self.runtime,
            "status": self.status,
            "base_url": self.base_url,
            "served_model_name": self.served_model_name,
            "pid": self.pid,
            "pgid": self.pgid,
            "log_path": self.log_path,
            "seconds_to_ready": None if self.seconds_to_ready is None else round(self.seconds_to_ready, 2),
            "phase": self.phase,
            "doctor": self.doctor,
            "findings": [f.to_dict() for f in self.findings],
            "replaced": self.replaced,
            "interrupted_by": self.interrupted_by,
            "answer_check": self.answer_check,
        }

    def render(self, console: Console) -> None:
        if self.status == "ready":
            console.print(
                f"[green]ready[/green] {self.served_model_name} at {self.base_url} "
                f"in {self.seconds_to_ready:.1f} s (pid {self.pid}, group {self.pgid})"
            )
        elif self.status == "check-failed":
            console.print(
                f"[bold red]check failed[/bold red]: {self.served_model_name} at {self.base_url} serves wrong answers; "
                f"left running for inspection, not ready (`tqdeploy down {self.build_dir}` stops it)"
            )
        elif self.status == "interrupted":
            console.print(f"[bold red]interrupted[/bold red] ({self.interrupted_by}): {self.build_dir} is not serving")
        elif self.status == "started":
            console.print(f"started {self.served_model_name} (group {self.pgid}); `tqdeploy status` follows it")
        else:
            console.print(f"[bold red]{self.status}[/bold red]: {self.build_dir} is not serving")
        if self.answer_check:
            render_answer_check(console, self.answer_check)
        shown = problems(self.findings)
        if shown:
            render_findings(console, shown, title="tqdeploy up", show_ok=False)
        if self.log_path:
            console.print(f"log: {self.log_path}")


def running_state(build_dir: Path, loaded: StateRecord | None | Unread = UNREAD) -> StateRecord | None:
    """The state of a deployment whose own processes are alive (marker, start time), else None (a corrupt
    file raises; a state copied from another folder is not this deployment's). loaded: the state the caller
    already read (`up` reads its folder's once and carries it), else it is read here."""
    st = state.read_record(build_dir) if isinstance(loaded, Unread) else loaded
    if st is None or st.is_empty:
        return None
    trusted = trust_state(build_dir, st)
    if trusted.findings:
        return None
    return st if registry.get(st.runtime).is_live(build_dir, st, trusted) else None


def already_running(build_dir: Path, st: StateRecord, starting: bool = False) -> Finding:
    what = "is being started by another `tqdeploy up`" if starting else "is already running"
    return Finding(
        "TQ414",
        Severity.ERROR,
        f"{build_dir} {what} (pid {st.pid}, {st.base_url})",
        {"pid": st.pid, "pgid": st.pgid, "phase": st.phase, "base_url": st.base_url},
        f"`tqdeploy status {build_dir}` shows it; `tqdeploy down {build_dir}` stops it first",
        AREA,
    )


def start_context(dep: Deployment) -> StartContext:
    v = dep.spec.vllm
    return StartContext(
        build_dir=str(dep.build_dir),
        port=dep.port,
        host=dep.host,
        max_model_len=v.max_model_len,
        kv_cache_dtype=v.kv_cache_dtype,
        gpu_memory_utilization=v.gpu_memory_utilization,
        model_dir=str(dep.model_dir),
        vllm_version=dep.spec.vllm_version,
    )


def up(
    build_dir: Path,
    *,
    python: str | None = None,
    wait: bool = True,
    timeout: float = 900.0,
    stall_timeout: float = 300.0,
    force: bool = False,
    grace: float = 20.0,
    on_progress: Callable[[str, float, str], None] | None = None,
    on_doctor: Callable[[str], None] | None = None,
    doctor: preflight.HostDoctor | None = None,
    runtime: str = "process",
    image: str | None = None,
    replace: Path | None = None,
    nginx_conf: Path | None = None,
    nginx_pid: Path = Path("/run/nginx.pid"),
    drain_timeout: float = 60.0,
    answer_check: Callable[[Path], Any] | None = None,
) -> UpResult:
    """Start BUILD_DIR's serve.sh (process runtime); with wait, return once ready or failed (and stopped).

    One `up` per build at a time (preflight.start_lock); SIGINT/SIGTERM stop what it started (interrupt.py).
    doctor: the host's doctor findings for a vLLM version (`tqdeploy up` passes tqdeploy.doctor's); None runs no
    doctor (no TQ417, result.doctor stays None). answer_check: run on the build once it is ready (`tqdeploy up`
    passes tqdeploy.answers' check, a result with findings, passed and summary()); None checks no answers.
    """

    dep = load_deployment(build_dir)
    result = UpResult(str(dep.build_dir), runtime, "refused", dep.base_url, dep.served_model_name)
    opts = _Options(
        python, wait, timeout, stall_timeout, force, grace, on_progress, on_doctor, doctor, runtime, image, answer_check
    )
    try:
        with raising(), preflight.start_lock(dep.build_dir):
            try:
                return _up(dep, result, opts, replace, nginx_conf, nginx_pid, drain_timeout)
            except Interrupted as sig:
                return _interrupted(dep, result, sig, grace)
    except preflight.StartBusy:
        result.findings.append(already_running(dep.build_dir, _state_or_empty(dep.build_dir), starting=True))
        return result
    except Interrupted as sig:  # before the lock was taken: nothing of this `up` runs
        result.status, result.interrupted_by, result.exit_status = "interrupted", sig.name, sig.exit_code
        return result


@dataclass
class _Options:
    python: str | None
    wait: bool
    timeout: float
    stall_timeout: float
    force: bool
    grace: float
    on_progress: Callable[[str, float, str], None] | None
    on_doctor: Callable[[str], None] | None
    doctor: preflight.HostDoctor | None
    runtime: str
    image: str | None
    answer_check: Callable[[Path], Any] | None = None
    replacing: bool = False  # --replace: a new server whose answers fail is stopped, the old one keeps serving
    restarts: int = 0  # the previous run's restarts + 1 (0 for a first start), from the state `up` loaded


def _state_or_empty(build_dir: Path) -> StateRecord:
    try:
        return state.read_record(build_dir) or StateRecord.empty()
    except TQError:
        return StateRecord.empty()


def _interrupted(dep: Deployment, result: UpResult, sig: Interrupted, grace: float) -> UpResult:
    """Stop everything this `up` started, as `down` does; the result says by which signal."""

    result.status, result.interrupted_by, result.exit_status = "interrupted", sig.name, sig.exit_code
    if not result.started:
        return result
    with ignored():
        stopped = down(dep.build_dir, timeout=grace)
    result.stopped = stopped.report.found if stopped.report else []
    result.findings += stopped.findings
    return result


def _up(
    dep: Deployment,
    result: UpResult,
    o: _Options,
    replace: Path | None,
    nginx_conf: Path | None,
    nginx_pid: Path,
    drain_timeout: float,
) -> UpResult:
    # The one read of this folder's state before the start, carried to every step that asks about the previous
    # run (is it live, its restarts, the interpreter it ran); a corrupt file refuses `up` here, as before.
    loaded = state.read_record(dep.build_dir)
    st = running_state(dep.build_dir, loaded)
    if st is not None:
        result.findings.append(already_running(dep.build_dir, st))
        return result
    orphans = unrecorded(dep.build_dir)
    if orphans is not None:
        result.findings.append(orphans)
        return result
    old = _replace_target(dep, replace) if replace is not None else None
    # --replace: the conf and nginx are proven before anything starts (a refusal leaves nothing running).
    switch = _switch_plan(old, nginx_conf, nginx_pid, o.wait) if old is not None else None
    # A runtime may stand in for the one asked on such a build (multinode for process with multinode.json).
    runtime = registry.for_start(o.runtime, dep.build_dir)
    prepared = runtime.prepare(dep, StartOptions(python=o.python, image=o.image, previous=loaded))
    if any(f.severity == Severity.ERROR for f in prepared.findings):  # the runtime cannot start here at all
        result.findings += prepared.findings
        return result
    drift = preflight.drift_finding(dep)
    if drift is not None:
        result.findings.append(drift)
    if o.doctor is not None:
        verdict, result.doctor = preflight.doctor_summary(dep, o.doctor)
        if o.on_doctor:
            o.on_doctor(result.doctor)
        result.findings.append(verdict)
    result.findings += runtime.preflight(dep)  # this host's port, model, key file, GPUs (runtime/base.py)
    overridden = callerenv.overrides()
    if overridden:  # passed on to serve.sh, never silently (runtime/callerenv.py says why)
        result.findings.append(callerenv.warning(overridden))
    blocking = [f for f in result.findings if f.severity == Severity.ERROR and (not o.force or f.id in preflight.HARD)]
    if blocking:
        return result
    for f in result.findings:
        if f.severity == Severity.ERROR:  # overridden by --force: still shown, no longer the verdict
            f.severity, f.title = Severity.WARN, f.title + " (started anyway: --force)"
    result.findings += prepared.findings  # the runtime's warnings (TQ423: capped container limits)
    restarts = (loaded.restarts or 0) + 1 if loaded is not None and not loaded.is_empty else 0
    result = _start(dep, result, runtime, prepared, with_fields(o, replacing=old is not None, restarts=restarts))
    if old is not None and switch is not None and result.status == "ready":
        _take_over(dep, result, old, o.grace, switch, drain_timeout)
    return result


def _switch_plan(old: dict[str, Any], nginx_conf: Path | None, nginx_pid: Path, wait: bool) -> SwitchPlan:

    if not wait:  # the switch follows ready: without the wait it would never happen
        raise TQError("--replace needs --wait", "drop --no-wait: up switches nginx once the new deployment is ready")
    return plan_switch(nginx_conf or folder(old["build_dir"]).nginx_conf, nginx_pid)


def _take_over(
    dep: Deployment, result: UpResult, old: dict[str, Any], grace: float, plan: SwitchPlan, drain_timeout: float
) -> None:
    """--replace: switch nginx to the new deployment, drain the old one, stop it. A switch that fails leaves
    nginx and the old deployment as they were, and stops the new one again: nothing of this `up` is left."""

    key = old_key(Path(old["build_dir"]))  # the drain's /metrics gets the old deployment's own key
    with ignored():  # NEW serves: a half-done switch (nginx on NEW, NEW stopped) would be worse than waiting
        try:
            switch = switch_and_drain(plan, f"{dep.connect_host}:{dep.port}", old["base_url"], drain_timeout, key)
        except TQError:
            down(dep.build_dir, timeout=grace)
            raise
        stopped = down(Path(old["build_dir"]), timeout=grace)
    result.replaced = {"old": old["build_dir"], "switch": switch.to_dict(), "old_stopped": stopped.status}
    result.findings += stopped.findings


def _replace_target(dep: Deployment, replace: Path) -> dict[str, Any]:
    """The running deployment --replace takes over from; it must be ready and on another port."""
    old_dir = Path(replace).resolve()
    if old_dir == dep.build_dir:
        raise TQError("--replace names the build being started", "pass the build dir of the running deployment")
    st = running_state(old_dir)
    if st is None or not st.ready:
        raise TQError(f"--replace {old_dir}: no ready deployment there", f"`tqdeploy status {old_dir}` shows it")
    if st.port == dep.port:
        raise TQError(
            f"{dep.build_dir} uses port {dep.port}, as the deployment it replaces",
            "set another server.port in the new spec and build again: both serve during the switch",
        )
    return st.to_json() | {"build_dir": str(old_dir)}


def _new_run(
    dep: Deployment, runtime: Runtime, prepared: Prepared, log_path: Path, baseline: GpuList, restarts: int
) -> None:
    """state.json of this run, written before anything starts (the keeper adds to it)."""
    state.new_state(
        dep.build_dir,
        runtime=runtime.name,
        host=dep.host,
        port=dep.port,
        base_url=dep.base_url,
        served_model_name=dep.served_model_name,
        spec_sha256=dep.spec_sha256,
        log_path=str(log_path),
        started_at=time.time(),
        phase="process",
        api_key_file=str(dep.api_key_file) if dep.api_key_file else None,
        restarts=restarts,
        gpu_baseline=baseline,
        marker=state.deployment_marker(dep.build_dir),
        env_overrides=callerenv.overrides() or None,
        **({"backend": prepared.backend.to_json()} if prepared.backend is not None else {}),
    )


def _start(dep: Deployment, result: UpResult, runtime: Runtime, prepared: Prepared, o: _Options) -> UpResult:

    log_path = state.new_log(dep.build_dir)
    baseline = gpu.gpu_memory()
    t0 = time.monotonic()
    result.started = True  # from here an interrupt stops the deployment
    _new_run(dep, runtime, prepared, log_path, baseline, o.restarts)
    try:
        started = runtime.start(dep, prepared, log_path)
    except BaseException:
        state.update_state(dep.build_dir, phase="failed")
        raise
    state.update_state(dep.build_dir, **_started_fields(started))
    result.pgid, result.log_path = started.pgid, str(log_path)
    if not o.wait:
        result.status, result.phase = "started", "process"
        result.pid = _child_pid(dep.build_dir)
        return result
    outcome = wait_ready(
        dep.build_dir,
        dep.base_url,
        dep.served_model_name,
        http.read_key(dep.api_key_file),
        start_context(dep),
        timeout=o.timeout,
        stall_timeout=o.stall_timeout,
        log_path=log_path,
        started=t0,
        on_progress=o.on_progress,
        runtime=runtime,
    )
    st = outcome.record or StateRecord.empty()
    if outcome.ready and st.pid is None:  # the supervisor records the server's pid: re-read once if not yet seen
        st = state.read_record(dep.build_dir) or st
    result.pid, result.phase = st.pid, outcome.phase
    if outcome.ready:
        result.status, result.seconds_to_ready = "ready", outcome.seconds
        state.update_state(dep.build_dir, phase="ready", ready=True, ready_at=time.time())
        if o.answer_check is not None:
            _check_answers(dep, result, o.answer_check)
            if result.status == "check-failed" and o.replacing:
                # Issue 35: a replace that fails after the new server started stops it again; traffic stays on
                # the old server, which was never touched.
                _stop_failed(dep, result, runtime, started, st, baseline, o.grace)
                state.update_state(dep.build_dir, phase="failed", ready=False, stopped_at=time.time())
        return result
    result.status = "failed"
    if outcome.finding is not None:
        outcome.finding.evidence.setdefault("log_path", str(log_path))
        callerenv.blame(outcome.finding, callerenv.overrides())
        result.findings.append(outcome.finding)
    _stop_failed(dep, result, runtime, started, st, baseline, o.grace)
    state.update_state(
        dep.build_dir,
        phase="failed",
        ready=False,
        stopped_at=time.time(),
        last_error=outcome.finding.to_dict() if outcome.finding else None,
    )
    return result


def _started_fields(started: Started) -> dict[str, Any]:
    """What start() knows at once, for state.json: only what it knows (the keeper records the server's pid itself,
    and a None here would overwrite it)."""
    known = {"pgid": started.pgid, "supervisor_pid": started.keeper.pid if started.keeper else None, "pid": started.pid}
    fields: dict[str, Any] = {k: v for k, v in known.items() if v is not None}
    if started.backend is not None:
        fields["backend"] = started.backend.to_json()
    return fields


def _check_answers(dep: Deployment, result: UpResult, answer_check: Callable[[Path], Any]) -> None:
    """Ready means answers verified. A failed check leaves the server running, so the operator can look at what
    it answers (`tqdeploy check`, the log), but the deployment is not ready: state.json says so, `status` exits 1,
    and `tqdeploy down` stops it. Under `--replace` the new server is stopped again (_start) and traffic stays on
    the old one."""
    checked = answer_check(dep.build_dir)
    result.answer_check = checked.summary()
    result.findings += [f for f in checked.findings if f.severity in (Severity.ERROR, Severity.WARN)]
    if not checked.passed:
        result.status = "check-failed"
    state.update_state(dep.build_dir, answer_check=result.answer_check, ready=checked.passed)


def _stop_failed(
    dep: Deployment,
    result: UpResult,
    runtime: Runtime,
    started: Started,
    st: StateRecord,
    baseline: GpuList,
    grace: float,
) -> None:
    """A start that failed leaves nothing running: the runtime stops all of it, as `down` would."""
    trusted = trust_state(dep.build_dir, st)
    own = with_fields(st, pgid=started.pgid)  # the group this `up` started, whatever the file says now
    report = runtime.stop(StopRequest(dep.build_dir, own, trusted, grace, gpu_baseline=baseline))
    result.findings += report.findings
    if started.keeper is not None:  # reaped, so no zombie of this `up` is left
        started.keeper.wait(timeout=5)


def _child_pid(build_dir: Path, timeout: float = 5.0) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = state.read_record(build_dir)
        if st is not None and st.pid:
            return st.pid
        time.sleep(0.05)
    return None
