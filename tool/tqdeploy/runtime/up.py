"""`up`: pre-flight, start under the supervisor, wait ready, classify a failure and clean up after it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.runtime import gpu, http, preflight, procs, state
from tqdeploy.runtime.classify import AREA, StartContext
from tqdeploy.runtime.deployment import Deployment, load_deployment

SCHEMA = "tqdeploy.up/1"


@dataclass
class UpResult:
    build_dir: str
    runtime: str
    status: str  # ready | failed | started | refused | interrupted
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
        }

    def render(self, console) -> None:
        from tqdeploy.runtime.view import render_up

        render_up(console, self)


def running_state(build_dir: Path) -> dict[str, Any] | None:
    """The state of a deployment whose own processes are alive (marker, start time), else None (a corrupt
    file raises; a state copied from another folder is not this deployment's)."""
    from tqdeploy.runtime.marker import trust_state

    st = state.read_state(build_dir)
    if not st:
        return None
    trusted = trust_state(build_dir, st)
    if trusted.findings:
        return None
    if any(procs.owned(st.get(k), trusted.marker, trusted.started_at) for k in ("supervisor_pid", "pid")):
        return st
    return None


def already_running(build_dir: Path, st: dict[str, Any], starting: bool = False) -> Finding:
    what = "is being started by another `tqdeploy up`" if starting else "is already running"
    return Finding(
        "TQ414",
        Severity.ERROR,
        f"{build_dir} {what} (pid {st.get('pid')}, {st.get('base_url')})",
        {"pid": st.get("pid"), "pgid": st.get("pgid"), "phase": st.get("phase"), "base_url": st.get("base_url")},
        f"`tqdeploy status {build_dir}` shows it; `tqdeploy down {build_dir}` stops it first",
        AREA,
    )


def start_context(dep: Deployment) -> StartContext:
    v = dep.spec["vllm"]  # type: ignore[index]
    return StartContext(
        build_dir=str(dep.build_dir),
        port=dep.port,
        host=dep.host,
        max_model_len=v["max_model_len"],
        kv_cache_dtype=v["kv_cache_dtype"],
        gpu_memory_utilization=v["gpu_memory_utilization"],
        model_dir=str(dep.model_dir),
        vllm_version=dep.spec.vllm_version,  # type: ignore[attr-defined]
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
    runtime: str = "process",
    image: str | None = None,
    replace: Path | None = None,
    nginx_conf: Path | None = None,
    nginx_pid: Path = Path("/run/nginx.pid"),
    drain_timeout: float = 60.0,
) -> UpResult:
    """Start BUILD_DIR's serve.sh (process runtime); with wait, return once ready or failed (and stopped).

    One `up` per build at a time (preflight.start_lock); SIGINT/SIGTERM stop what it started (interrupt.py).
    """
    from tqdeploy.runtime.interrupt import Interrupted, raising

    dep = load_deployment(build_dir)
    result = UpResult(str(dep.build_dir), runtime, "refused", dep.base_url, dep.served_model_name)
    opts = _Options(python, wait, timeout, stall_timeout, force, grace, on_progress, on_doctor, runtime, image)
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
    runtime: str
    image: str | None


def _state_or_empty(build_dir: Path) -> dict[str, Any]:
    try:
        return state.read_state(build_dir) or {}
    except TQError:
        return {}


def _interrupted(dep: Deployment, result: UpResult, sig, grace: float) -> UpResult:
    """Stop everything this `up` started, as `down` does; the result says by which signal."""
    from tqdeploy.runtime.down import down
    from tqdeploy.runtime.interrupt import ignored

    result.status, result.interrupted_by, result.exit_status = "interrupted", sig.name, sig.exit_code
    if not result.started:
        return result
    with ignored():
        stopped = down(dep.build_dir, timeout=grace)
    result.stopped = stopped.report.found if stopped.report else []
    result.findings += stopped.findings
    return result


def _up(dep, result, o: _Options, replace, nginx_conf, nginx_pid, drain_timeout) -> UpResult:
    python, wait, timeout, stall_timeout, force, grace = o.python, o.wait, o.timeout, o.stall_timeout, o.force, o.grace
    on_progress, on_doctor, runtime, image = o.on_progress, o.on_doctor, o.runtime, o.image
    st = running_state(dep.build_dir)
    if st is not None:
        result.findings.append(already_running(dep.build_dir, st))
        return result
    old = _replace_target(dep, replace) if replace is not None else None
    vllm_python = preflight_python(python, dep.build_dir) if runtime == "process" else None
    if vllm_python is not None:
        from tqdeploy.runtime.process import PYTHON_ENV, has_vllm

        if not has_vllm(vllm_python):
            result.findings.append(
                Finding(
                    "TQ424",
                    Severity.ERROR,
                    f"{vllm_python} cannot import vllm",
                    {"python": vllm_python},
                    f"pass --python with the interpreter that has vLLM (e.g. .venv-vllm/bin/python) or set "
                    f"{PYTHON_ENV}; a vLLM installed elsewhere needs its PYTHONPATH",
                    AREA,
                )
            )
            return result
    drift = preflight.drift_finding(dep)
    if drift is not None:
        result.findings.append(drift)
    doctor, result.doctor = preflight.doctor_summary(dep)
    if on_doctor:
        on_doctor(result.doctor)
    result.findings.append(doctor)
    result.findings += preflight.host_findings(dep)
    blocking = [f for f in result.findings if f.severity == Severity.ERROR and (not force or f.id in preflight.HARD)]
    if blocking:
        return result
    for f in result.findings:
        if f.severity == Severity.ERROR:  # overridden by --force: still shown, no longer the verdict
            f.severity, f.title = Severity.WARN, f.title + " (started anyway: --force)"

    result = _start(dep, result, vllm_python, wait, timeout, stall_timeout, grace, on_progress, runtime, image)
    if old is not None and result.status == "ready":
        from tqdeploy.runtime.down import down
        from tqdeploy.runtime.interrupt import ignored
        from tqdeploy.runtime.replace import old_key, switch_and_drain

        conf = nginx_conf or Path(old["build_dir"]) / "nginx.conf"
        key = old_key(Path(old["build_dir"]))  # the drain's /metrics gets the old deployment's own key
        with ignored():  # NEW serves: a half-done switch (nginx on NEW, NEW stopped) would be worse than waiting
            switch = switch_and_drain(
                conf, nginx_pid, f"{dep.connect_host}:{dep.port}", old["base_url"], drain_timeout, key
            )
            stopped = down(Path(old["build_dir"]), timeout=grace)
        result.replaced = {"old": old["build_dir"], "switch": switch.to_dict(), "old_stopped": stopped.status}
        result.findings += stopped.findings
    return result


def _replace_target(dep: Deployment, replace: Path) -> dict[str, Any]:
    """The running deployment --replace takes over from; it must be ready and on another port."""
    old_dir = Path(replace).resolve()
    if old_dir == dep.build_dir:
        raise TQError("--replace names the build being started", "pass the build dir of the running deployment")
    st = running_state(old_dir)
    if st is None or not st.get("ready"):
        raise TQError(f"--replace {old_dir}: no ready deployment there", f"`tqdeploy status {old_dir}` shows it")
    if st.get("port") == dep.port:
        raise TQError(
            f"{dep.build_dir} uses port {dep.port}, as the deployment it replaces",
            "set another server.port in the new spec and build again: both serve during the switch",
        )
    return st | {"build_dir": str(old_dir)}


def preflight_python(python: str | None, build_dir: Path) -> str:
    from tqdeploy.runtime.process import resolve_python

    try:
        st = state.read_state(build_dir) or {}
    except TQError:
        st = {}
    # Only a state this folder's own `up` wrote names the interpreter to run (a copied one is another's).
    previous = st.get("python") if st.get("marker") == state.deployment_marker(build_dir) else None
    return resolve_python(python, previous if isinstance(previous, str) else None)


def _launch(dep: Deployment, runtime: str, image: str | None, vllm_python: str | None, log_path: Path, ulimits=None):
    """Start the server; (the detached supervisor or log pump, its process group, container id or None)."""
    from tqdeploy.runtime.process import serve_env, start_supervisor

    if runtime == "docker":
        from tqdeploy.runtime.container import start_container
        from tqdeploy.runtime.process import pump_env

        container, pump = start_container(dep, image, log_path, pump_env(dep.build_dir), ulimits)
        return pump, pump.pid, container.id
    assert vllm_python is not None
    env = serve_env(dep.build_dir, vllm_python, dep.model_dir, dep.api_key_file, dep.spec["resources"]["gpus"])  # type: ignore[index]
    from tqdeploy.runtime import multinode

    record = multinode.build_record(dep.build_dir)
    if record is not None:  # a multi-node build: the leader here, the workers beside it (runtime/multinode.py)
        env = multinode.node_env(env, dep.build_dir, 0, record)
        multinode.start_workers(dep.build_dir, env, record)
    sup = start_supervisor(dep.build_dir, env, log_path)
    return sup, sup.pid, None


def _start(dep, result, vllm_python, wait, timeout, stall_timeout, grace, on_progress, runtime="process", image=None):
    from tqdeploy.runtime.process import new_log
    from tqdeploy.runtime.wait import wait_ready

    ulimits = None
    if runtime == "docker":
        from tqdeploy.runtime.container import engine_limits, ulimits_for_engine

        ulimits, capped = ulimits_for_engine(engine_limits())
        if capped:
            result.findings.append(
                Finding(
                    "TQ423",
                    Severity.WARN,
                    "container ulimits capped at the Docker engine's own hard limits",
                    capped,
                    "raise dockerd's limits (systemd: LimitMEMLOCK=infinity, LimitNOFILE=1048576 in docker.service, "
                    "then restart docker): vLLM pins host memory and opens many files",
                    AREA,
                )
            )
    log_path = new_log(dep.build_dir)
    baseline = gpu.gpu_memory()
    started, t0 = time.time(), time.monotonic()
    previous = _previous_restarts(dep.build_dir)
    result.started = True  # from here an interrupt stops the deployment
    state.new_state(
        dep.build_dir,
        runtime=runtime,
        host=dep.host,
        port=dep.port,
        base_url=dep.base_url,
        served_model_name=dep.served_model_name,
        spec_sha256=dep.spec_sha256,
        log_path=str(log_path),
        started_at=started,
        phase="process",
        api_key_file=str(dep.api_key_file) if dep.api_key_file else None,
        restarts=previous,
        python=vllm_python,
        gpu_baseline=baseline,
        marker=state.deployment_marker(dep.build_dir),
    )
    try:
        sup, pgid, container_id = _launch(dep, runtime, image, vllm_python, log_path, ulimits)
    except BaseException:
        state.update_state(dep.build_dir, phase="failed")
        raise
    state.update_state(dep.build_dir, pgid=pgid, supervisor_pid=sup.pid, container_id=container_id)
    if container_id:
        from tqdeploy.runtime.container import container_facts

        state.update_state(dep.build_dir, pid=(container_facts(container_id) or {}).get("pid"))
    result.pgid, result.log_path = pgid, str(log_path)
    if not wait:
        result.status, result.phase = "started", "process"
        result.pid = _child_pid(dep.build_dir)
        return result
    outcome = wait_ready(
        dep.build_dir,
        dep.base_url,
        dep.served_model_name,
        http.read_key(dep.api_key_file),
        start_context(dep),
        timeout=timeout,
        stall_timeout=stall_timeout,
        log_path=log_path,
        started=t0,
        on_progress=on_progress,
        watch=_worker_watch(dep.build_dir, started),
    )
    st = state.read_state(dep.build_dir) or {}
    result.pid, result.phase = st.get("pid"), outcome.phase
    if outcome.ready:
        result.status, result.seconds_to_ready = "ready", outcome.seconds
        state.update_state(dep.build_dir, phase="ready", ready=True, ready_at=time.time())
        return result
    result.status = "failed"
    if outcome.finding is not None:
        outcome.finding.evidence.setdefault("log_path", str(log_path))
        result.findings.append(outcome.finding)
    from tqdeploy.runtime.stop import stop_deployment

    if container_id:
        from tqdeploy.runtime.container import stop_container

        stop_container(container_id, grace)
    server_pid = None if container_id else st.get("pid")
    from tqdeploy.runtime.marker import trust_state

    trusted = trust_state(dep.build_dir, st)
    report = stop_deployment(
        dep.build_dir, pgid, grace, server_pid=server_pid, gpu_baseline=baseline, trusted=trusted, groups=_groups(dep)
    )
    result.findings += report.findings
    sup.wait(timeout=5)
    state.update_state(
        dep.build_dir,
        phase="failed",
        ready=False,
        stopped_at=time.time(),
        last_error=outcome.finding.to_dict() if outcome.finding else None,
    )
    return result


def _worker_watch(build_dir: Path, started: float):
    """A multi-node build's worker nodes, watched while the leader starts (None for one node)."""
    from tqdeploy.runtime import multinode

    if not (build_dir / "multinode.json").exists():
        return None
    return multinode.worker_watch(build_dir, state.deployment_marker(build_dir), started)


def _groups(dep: Deployment) -> list[int]:
    """The worker nodes' process groups: the deployment's own, not strays of the leader's group."""
    from tqdeploy.runtime import multinode

    return multinode.worker_pgids(dep.build_dir, state.deployment_marker(dep.build_dir), None)


def _previous_restarts(build_dir: Path) -> int:
    try:
        old = state.read_state(build_dir)
    except TQError:
        return 0
    return int(old.get("restarts", 0)) + 1 if old else 0


def _child_pid(build_dir: Path, timeout: float = 5.0) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = state.read_state(build_dir) or {}
        if st.get("pid"):
            return st["pid"]
        time.sleep(0.05)
    return None
