"""Which deployment a build folder is, and what of its state.json may be acted on.

The marker (runtime/folderid.py) names the folder by its resolved path, not its contents: a `cp -a` copy (same
state.json, another path) is another deployment, and a folder built again where it was is the same one. `up`
records it in state.json; a state whose recorded marker is not this folder's was written for another folder,
and its pids and times are not trusted. The state comes in as the typed record that state.read_record parsed
and validated once for the command (runtime/record.py), never as the file's dict.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.findings import Finding, Severity
from tqdeploy.runtime.classify import AREA
from tqdeploy.runtime.folderid import deployment_marker
from tqdeploy.runtime.guard import refusal
from tqdeploy.runtime.procs import alive, deployment_procs, read_proc
from tqdeploy.runtime.record import StateRecord


@dataclass
class Trusted:
    """What a state file may be believed about: the marker, and the start time when it is this folder's."""

    marker: str
    started_at: float | None
    findings: list[Finding] = field(default_factory=list)


def _finding(title: str, evidence: dict[str, Any], fix: str) -> Finding:
    return Finding("TQ425", Severity.WARN, title, evidence, fix, AREA)


def _started_at(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        if 0 < value <= time.time() + 60:
            return float(value)
    return None


def trust_state(build_dir: Path, st: StateRecord | None) -> Trusted:
    """The marker to look for and the state's started_at, if the state is this folder's own."""
    marker = deployment_marker(build_dir)
    if st is None or st.is_empty:
        return Trusted(marker, None)
    recorded = st.marker
    if recorded != marker:
        title = (
            "state.json was written for another build folder (a copy?): its processes are not this deployment's"
            if recorded
            else "state.json records no deployment marker: its pids are not trusted"
        )
        fix = (
            f"nothing of the other folder was touched; run `tqdeploy down` in the folder `up` started "
            f"(the one whose marker is {str(recorded)[:16]!r})"
            if recorded
            else "processes were looked for by this folder's marker only; `tqdeploy up` records the marker again"
        )
        return Trusted(marker, None, [_finding(title, {"recorded_marker": recorded, "folder_marker": marker}, fix)])
    started = _started_at(st.started_at)
    trusted = Trusted(marker, started)
    if started is None and st.started_at is not None:  # validated as a time, but not one already past
        trusted.findings.append(
            _finding(
                "state.json's started_at is not a time: processes matched by marker only",
                {"started_at": str(st.started_at)[:64]},
                "nothing to do: `tqdeploy up` writes it again",
            )
        )
    return trusted


def describe(pid: object) -> str:
    """What a pid from state.json is, for a finding (never its environment)."""

    if not isinstance(pid, int) or isinstance(pid, bool):
        return f"{str(pid)[:40]!r} is not a pid"
    proc = read_proc(pid) if pid > 0 else None
    if proc is None or proc.state == "Z":
        return f"pid {pid} is not running"
    why = refusal(proc)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(proc.started))
    text = f"pid {pid} is {proc.title!r} (uid {proc.uid}, started {started})"
    return text + (f": {why}, never signalled" if why else "")


def foreign_pids(st: StateRecord, trusted: Trusted, members: list[int]) -> Finding | None:
    """A finding for each pid/pgid in state.json that names a live process which is not the deployment's."""

    found = {}
    for name, value in st.pids().items():
        if value is None or value in members:
            continue
        if isinstance(value, int) and not isinstance(value, bool) and value > 1 and not alive(value):
            continue  # a process that exited: nothing to say
        found[name] = describe(value)
    if not found:
        return None
    return _finding(
        "state.json names processes that are not this deployment's: not signalled",
        found | {"marker": trusted.marker},
        "nothing of them was touched; a deployment's processes carry TQDEPLOY_DEPLOYMENT="
        f"{trusted.marker} and started after started_at. If state.json was edited, `tqdeploy down --force` "
        "finds the deployment's own by that marker",
    )


def unrecorded(build_dir: Path) -> Finding | None:
    """TQ414 for processes that carry this build's marker though no state says they run (the folder was removed and
    built again while its server ran): `up` refuses to start beside them, `status` shows them."""

    found = deployment_procs(deployment_marker(build_dir))
    if not found:
        return None
    return Finding(
        "TQ414",
        Severity.ERROR,
        f"{build_dir} has {len(found)} process(es) of an earlier start still running, which its state.json does "
        "not record (the folder was removed or rewritten while they ran)",
        {"processes": [p.to_dict() for p in found[:20]]},
        f"`tqdeploy down --force {build_dir}` stops them (found by the deployment marker), then start again",
        AREA,
    )
