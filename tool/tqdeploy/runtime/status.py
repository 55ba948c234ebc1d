"""`status`: is the deployment live and ready, in which phase, since when, and what it holds (GPU memory)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from tqdeploy.errors import TQError
from tqdeploy.findings import Finding
from tqdeploy.net import key_refused_finding, model_ids, redact_url, same_origin
from tqdeploy.output import render_findings
from tqdeploy.runtime import gpu, http, registry, state
from tqdeploy.runtime.deployment import load_deployment
from tqdeploy.runtime.marker import trust_state, unrecorded
from tqdeploy.runtime.view import render_answer_check

SCHEMA = "tqdeploy.status/1"


@dataclass
class ServerAnswers:
    """/health and /v1/models of the running deployment, asked with its own key."""

    health: int | None = None
    models: list[str] | None = None
    findings: list[Finding] = field(default_factory=list)

    @classmethod
    def ask(cls, build_dir: Path, base_url: object) -> ServerAnswers:
        if not isinstance(base_url, str) or http.client(base_url) is None:
            return cls()  # not an http(s) URL: nothing to ask (and nothing shown of it but its redacted form)
        key, key_file, why_not = _own_key(build_dir, base_url)
        out = cls(health=http.health(base_url))
        if out.health != 200:
            return out
        answer = http.models_answer(base_url, key)
        out.models = model_ids(answer)
        if answer.key_refused:
            fix = why_not or (
                f"the server runs with another key than {key_file}: restart it through `tqdeploy up {build_dir}`"
            )
            out.findings.append(
                key_refused_finding(answer, sent_key=key is not None, fix=fix, area="runtime", key_file=key_file)
            )
        return out


def _own_key(build_dir: Path, base_url: str) -> tuple[str | None, str | None, str]:
    """The build's key (its spec's server.api_key_file), that file, and why no key is sent ('' when one is):
    only to the build's own origin, so a state file edited to point elsewhere never gets the key."""

    try:
        dep = load_deployment(build_dir)
    except (TQError, OSError, ValueError, KeyError) as err:
        return None, None, f"the build cannot be read ({str(err)[:120]}): rebuild it with `tqdeploy build`"
    if dep.api_key_file is None:
        return None, None, f"set server.api_key_file in {build_dir}/tqdeploy.toml to the key file the server uses"
    if not same_origin(base_url, dep.base_url):
        return (
            None,
            str(dep.api_key_file),
            (
                f"the state's base_url {redact_url(base_url)} is not this build's address {dep.base_url}, so its key "
                f"is not sent there: `tqdeploy down {build_dir}` and `tqdeploy up {build_dir}` write the state anew"
            ),
        )
    return http.read_key(dep.api_key_file), str(dep.api_key_file), ""


@dataclass
class StatusResult:
    build_dir: str
    data: dict[str, Any]
    runtime_lines: list[str] = field(default_factory=list)  # the runtime's own view of its extras (RuntimeFacts)

    @property
    def exit_code(self) -> int:
        """0 ready; 1 running but not ready, stopped, failed or never started, or the key refused."""
        return 0 if self.data["ready"] and not self.data.get("findings") else 1

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "build_dir": self.build_dir, **self.data}

    def render(self, console: Console) -> None:
        d = self.data
        line = f"{self.build_dir}: {d['state']}"
        if d["live"]:
            line += f" (phase {d['phase']}, pid {d['pid']}, up {d['uptime_s']:.0f} s, health {d['health']})"
        if d.get("base_url"):
            line += f" {d['served_model_name']} at {d['base_url']}"
        console.print(line)
        self._render_running(console)
        if d.get("answer_check"):
            render_answer_check(console, d["answer_check"])
        err = d.get("last_error")
        if err:
            console.print(f"[red]last error[/red] {err['id']}: {err['title']}")
            if err.get("remediation"):
                console.print(f"  fix: {err['remediation']}")
        if d.get("log_path"):
            console.print(f"log: {d['log_path']}")
        if self.data.get("findings"):
            render_findings(console, [Finding.from_dict(f) for f in self.data["findings"]], "status", show_ok=False)

    def _render_running(self, console: Console) -> None:
        """What runs: the caller's overrides, restarts, processes, what the runtime adds (its own lines), GPUs."""
        d = self.data
        for name, value in (d.get("env_overrides") or {}).items():  # what serve.sh read instead of the build's own
            console.print(f"environment: {name}={value} (set by the caller of `up`)", markup=False)
        if d.get("restarts"):
            console.print(f"restarts: {d['restarts']}")
        for p in d["processes"]:
            console.print(f"  pid {p['pid']} {p['title']}")
        for line in self.runtime_lines:
            console.print(line, markup=False)
        for g in d.get("gpus") or []:
            console.print(f"GPU {g['index']} {g['name']}: {g['used_mib']} / {g['total_mib']} MiB used")


def status(build_dir: Path, *, probe: bool = True) -> StatusResult:
    """State plus what is true now: processes alive, /health, GPU memory. A corrupt state file raises."""
    build_dir = Path(build_dir).resolve()
    st = state.read_record(build_dir)  # the one read: facts, answers and the result all use this record
    if st is None:
        data = _never_started(probe)
        orphans = unrecorded(build_dir)  # a rebuilt folder whose old server still runs
        if orphans is not None:
            data |= {"state": "unrecorded", "processes": orphans.evidence["processes"], "findings": [orphans.to_dict()]}
        return StatusResult(str(build_dir), data)
    trusted = trust_state(build_dir, st)  # only processes with this folder's marker count (runtime/procs.py)
    now = registry.get(st.runtime).facts(build_dir, st, trusted)
    live = now.live
    server = ServerAnswers.ask(build_dir, st.base_url) if (probe and live) else ServerAnswers()
    health = server.health
    # `up --no-wait` never records ready: what /health answers now is the truth.
    # A server whose answers failed `up`'s check serves, but is not ready (runtime/up.py _check_answers).
    check_failed = bool(st.answer_check and st.answer_check.get("status") == "fail")
    ready = bool(live and health == 200 and not check_failed)
    started = st.started_at
    if live:
        label = "ready" if ready else "check-failed" if check_failed else ("unhealthy" if st.ready else "starting")
    else:
        label = str(st.phase) if st.phase in ("stopped", "failed") else "exited"
    data = {
        "state": label,
        "live": live,
        "ready": ready,
        "phase": st.phase,
        "pid": st.pid,
        "pgid": st.pgid,
        "runtime": st.runtime,
        "base_url": redact_url(st.base_url) if st.base_url else None,
        "served_model_name": st.served_model_name,
        "served_models": server.models,
        "started_at": started,
        "uptime_s": round(time.time() - started, 1) if (live and started) else None,
        "restarts": st.restarts if "restarts" in st.present else 0,
        "last_error": st.last_error,
        "answer_check": st.answer_check,
        "exit_code": st.exit_code,
        "log_path": st.log_path,
        "spec_sha256": st.spec_sha256,
        "env_overrides": st.env_overrides or {},  # the caller's TQ_* variables serve.sh read (callerenv.py)
        "processes": [p.to_dict() for p in now.processes],
        "health": health,
        "gpus": gpu.gpu_memory() if probe else None,
        "findings": [f.to_dict() for f in [*server.findings, *now.findings]],
        "unknown_state_fields": list(st.unknown),  # not acted on (runtime/record.py: reported, not refused)
        **now.extra,  # what the runtime adds (docker: the container; multinode: the nodes)
    }
    return StatusResult(str(build_dir), data, now.lines)


def _never_started(probe: bool) -> dict[str, Any]:
    return {
        "state": "not-started",
        "live": False,
        "ready": False,
        "phase": None,
        "pid": None,
        "pgid": None,
        "base_url": None,
        "served_model_name": None,
        "uptime_s": None,
        "restarts": 0,
        "last_error": None,
        "log_path": None,
        "processes": [],
        "health": None,
        "gpus": gpu.gpu_memory() if probe else None,
        "exit_code": None,
        "served_models": None,
        "findings": [],
    }
