"""Wait for a started deployment: ready (/health 200 and the served model in /v1/models), failed, or timed out.

The phase comes from the stamped log (tqdeploy.runtime.phases); "no progress" means no new log line for
stall_timeout seconds. The keeper's exit record in state.json tells that vLLM is gone; the runtime, that its keeper is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.findings import Finding, Severity
from tqdeploy.net import Answer, key_refused_finding, model_ids
from tqdeploy.runtime import http
from tqdeploy.runtime.classify import AREA, StartContext, classify_exit, classify_log
from tqdeploy.runtime.interface import Runtime
from tqdeploy.runtime.logstamp import split
from tqdeploy.runtime.marker import trust_state
from tqdeploy.runtime.phases import advance
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.state import read_record

POLL_S = 0.5


@dataclass
class LogTail:
    path: Path
    offset: int = 0
    lines: list[str] = field(default_factory=list)
    last_new_at: float = field(default_factory=time.monotonic)

    def read_new(self) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        new = [split(raw)[1] for raw in data[:end].decode("utf-8", errors="replace").splitlines()]
        if new:
            self.lines += new
            self.last_new_at = time.monotonic()
        return new


@dataclass
class WaitOutcome:
    ready: bool
    phase: str
    seconds: float
    finding: Finding | None = None
    exit_code: int | None = None
    record: StateRecord | None = None  # the state as the last poll read it (the keeper's pid, its exit code)


def _stop_finding(id_: str, title: str, evidence: dict[str, Any], remediation: str) -> Finding:
    return Finding(id_, Severity.ERROR, title, evidence, remediation, AREA)


def _key_refused(answer: Answer, key: str | None, ctx: StartContext) -> Finding:
    return key_refused_finding(
        answer,
        sent_key=key is not None,
        fix=f"start it with the key in the build's server.api_key_file ({ctx.build_dir}/tqdeploy.toml): "
        "stop what serves on that port, then `tqdeploy up` again",
        area=AREA,
    )


def _gone(build_dir: Path, record: StateRecord, runtime: Runtime, tail: LogTail, ctx: StartContext) -> Finding | None:
    """Why the run is no longer alive, None while it is: what the runtime itself knows first (a multi-node
    build's dead worker: its `failed`), else what the log says, else TQ408."""
    trusted = trust_state(build_dir, record)
    own = runtime.failed(build_dir, record, trusted)
    if own is not None:
        return own
    if runtime.is_live(build_dir, record, trusted):
        return None
    tail.read_new()
    return classify_log(tail.lines, ctx) or _stop_finding(
        "TQ408",
        "the deployment's processes were killed during start-up (supervisor gone)",
        {"pgid": record.pgid},
        "something killed the whole process group (SIGKILL, OOM killer: `dmesg | grep -i oom`); start again",
    )


@dataclass(frozen=True)
class _Target:
    """What one wait polls: the build's state and log, its server's address, the runtime that knows its keeper."""

    build_dir: Path
    base_url: str
    served_name: str
    key: str | None
    ctx: StartContext
    runtime: Runtime


def _ended(target: _Target, tail: LogTail) -> tuple[StateRecord, tuple[Finding | None, int | None] | None]:
    """The state read now, and (why, exit code) once the run ended (None while it runs)."""
    # Re-read each poll: the keeper (supervisor, log pump) writes the server's pid and exit code meanwhile.
    record = read_record(target.build_dir) or StateRecord.empty()
    gone = None if record.exit_code is not None else _gone(target.build_dir, record, target.runtime, tail, target.ctx)
    if gone is not None:
        # The keeper may have recorded the exit and ended between the read above and the liveness check: its
        # exit code, once there, says more than "gone" (seen under load: TQ408 for serve.sh's key-file exit).
        record = read_record(target.build_dir) or record
    if record.exit_code is not None:
        time.sleep(POLL_S)  # the last lines of a dying process
        tail.read_new()
        return record, (classify_exit(tail.lines, record.exit_code, target.ctx), record.exit_code)
    return record, None if gone is None else (gone, None)


def _answered(target: _Target) -> tuple[bool, Finding | None] | None:
    """(ready, why not) once the server answers /health and /v1/models; None while it does not yet."""
    if http.health(target.base_url) != 200:
        return None
    answer = http.models_answer(target.base_url, target.key)
    if answer.key_refused:  # the server runs with another key than the build's key file: never ready
        return False, _key_refused(answer, target.key, target.ctx)
    models = model_ids(answer)
    if models is None:
        return None
    if target.served_name in models:
        return True, None
    return False, _stop_finding(
        "TQ421",
        f"/v1/models does not list the served model {target.served_name!r}",
        {"listed": models},
        "another server answers on this port, or the build's served_name differs; check "
        "`tqdeploy status` and model.served_name",
    )


def _overdue(
    tail: LogTail, phase: str, elapsed: float, timeout: float, stall_timeout: float, build: str
) -> Finding | None:
    """TQ409 past the timeout, TQ410 when no log line came for stall_timeout; None while neither."""
    last = tail.lines[-1][-300:] if tail.lines else ""
    if elapsed > timeout:
        return _stop_finding(
            "TQ409",
            f"not ready after {timeout:g} s (phase: {phase})",
            {"timeout_s": timeout, "phase": phase, "last_line": last},
            "raise --timeout if the log is still moving (a cold start compiles and captures graphs), "
            f"else read `tqdeploy logs {build}`",
        )
    silent = time.monotonic() - tail.last_new_at
    if silent > stall_timeout:
        return _stop_finding(
            "TQ410",
            f"start-up stalled: no log line for {silent:.0f} s (phase: {phase})",
            {"stall_timeout_s": stall_timeout, "phase": phase, "last_line": last},
            "a hung download, NCCL or compile step; read `tqdeploy logs`, fix it, or raise --stall-timeout",
        )
    return None


def wait_ready(
    build_dir: Path,
    base_url: str,
    served_name: str,
    key: str | None,
    ctx: StartContext,
    *,
    timeout: float,
    stall_timeout: float,
    log_path: Path,
    started: float,
    runtime: Runtime,
    on_progress: Callable[[str, float, str], None] | None = None,
) -> WaitOutcome:
    """Poll until ready, failed or timed out; the runtime says whether the run is still alive."""
    target = _Target(build_dir, base_url, served_name, key, ctx, runtime)
    tail = LogTail(log_path)
    phase = "process"
    while True:
        for line in tail.read_new():
            phase = advance(phase, line)
        elapsed = time.monotonic() - started
        if on_progress:
            on_progress(phase, elapsed, tail.lines[-1] if tail.lines else "")
        record, ended = _ended(target, tail)
        if ended is not None:
            return WaitOutcome(False, phase, elapsed, *ended, record=record)
        answered = _answered(target)
        if answered is not None:
            ready, why = answered
            if ready:
                return WaitOutcome(True, "ready", time.monotonic() - started, record=record)
            return WaitOutcome(False, phase, elapsed, why, record=record)
        late = _overdue(tail, phase, elapsed, timeout, stall_timeout, ctx.build_dir)
        if late is not None:
            return WaitOutcome(False, phase, elapsed, late, record=record)
        time.sleep(POLL_S)
