"""Wait for a started deployment: ready (/health 200 and the served model in /v1/models), failed, or timed out.

The phase comes from the stamped log (tqdeploy.runtime.phases); "no progress" means no new log line for
stall_timeout seconds. The keeper's exit record in state.json tells that vLLM is gone; the runtime, that its keeper is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tqdeploy.findings import Finding, Severity
from tqdeploy.net import key_refused_finding, model_ids
from tqdeploy.runtime import http
from tqdeploy.runtime.classify import AREA, StartContext, classify_exit, classify_log
from tqdeploy.runtime.logstamp import split
from tqdeploy.runtime.marker import trust_state
from tqdeploy.runtime.phases import advance
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.state import read_record

if TYPE_CHECKING:
    from tqdeploy.runtime.base import Runtime

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


def _stop_finding(id_: str, title: str, evidence: dict, remediation: str) -> Finding:
    return Finding(id_, Severity.ERROR, title, evidence, remediation, AREA)


def _key_refused(answer, key: str | None, ctx: StartContext) -> Finding:
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
    tail = LogTail(log_path)
    phase = "process"
    while True:
        for line in tail.read_new():
            phase = advance(phase, line)
        elapsed = time.monotonic() - started
        last = tail.lines[-1] if tail.lines else ""
        if on_progress:
            on_progress(phase, elapsed, last)
        record = read_record(build_dir) or StateRecord.empty()
        if record.exit_code is not None:
            time.sleep(POLL_S)  # the last lines of a dying process
            tail.read_new()
            finding = classify_exit(tail.lines, record.exit_code, ctx)
            return WaitOutcome(False, phase, elapsed, finding, record.exit_code)
        gone = _gone(build_dir, record, runtime, tail, ctx)
        if gone is not None:
            return WaitOutcome(False, phase, elapsed, gone)
        if http.health(base_url) == 200:
            answer = http.models_answer(base_url, key)
            if answer.key_refused:  # the server runs with another key than the build's key file: never ready
                return WaitOutcome(False, phase, elapsed, _key_refused(answer, key, ctx))
            models = model_ids(answer)
            if models is not None and served_name in models:
                return WaitOutcome(True, "ready", time.monotonic() - started)
            if models is not None:
                finding = _stop_finding(
                    "TQ421",
                    f"/v1/models does not list the served model {served_name!r}",
                    {"listed": models},
                    "another server answers on this port, or the build's served_name differs; check "
                    "`tqdeploy status` and model.served_name",
                )
                return WaitOutcome(False, phase, elapsed, finding)
        if elapsed > timeout:
            return WaitOutcome(
                False,
                phase,
                elapsed,
                _stop_finding(
                    "TQ409",
                    f"not ready after {timeout:g} s (phase: {phase})",
                    {"timeout_s": timeout, "phase": phase, "last_line": last[-300:]},
                    "raise --timeout if the log is still moving (a cold start compiles and captures graphs), "
                    f"else read `tqdeploy logs {ctx.build_dir}`",
                ),
            )
        silent = time.monotonic() - tail.last_new_at
        if silent > stall_timeout:
            return WaitOutcome(
                False,
                phase,
                elapsed,
                _stop_finding(
                    "TQ410",
                    f"start-up stalled: no log line for {silent:.0f} s (phase: {phase})",
                    {"stall_timeout_s": stall_timeout, "phase": phase, "last_line": last[-300:]},
                    "a hung download, NCCL or compile step; read `tqdeploy logs`, fix it, or raise --stall-timeout",
                ),
            )
        time.sleep(POLL_S)
