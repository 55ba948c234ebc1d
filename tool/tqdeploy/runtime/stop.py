"""Stop a deployment and prove nothing is left: no process of its group or with its marker, no `VLLM::`
process of it, its port free, and on GPU hosts the GPU memory back near what it was before `up`."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.findings import Finding, Severity
from tqdeploy.net.ports import port_free
from tqdeploy.runtime import gpu, procs
from tqdeploy.runtime.classify import AREA
from tqdeploy.runtime.marker import Trusted, trust_state

# NVML reports a few MiB of jitter and the driver returns memory shortly after the process is gone.
GPU_TOLERANCE_MIB = 512
GPU_SETTLE_S = 10.0


@dataclass
class StopReport:
    found: list[dict[str, Any]] = field(default_factory=list)
    killed: list[dict[str, Any]] = field(default_factory=list)
    left: list[dict[str, Any]] = field(default_factory=list)
    port_free: bool | None = None
    gpus: list[dict[str, Any]] | None = None
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    others: list[dict[str, Any]] = field(default_factory=list)  # stopped besides processes (a container)


def address(host: object, port: object) -> tuple[str, int] | None:
    """The state's host and port when they are an address to check (an IP literal or localhost, a port
    number); None otherwise, so a hand-edited host never makes `down` resolve names or wait on them."""
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536 or not isinstance(host, str):
        return None
    if host == "localhost":
        return "127.0.0.1", port
    try:
        return str(ipaddress.ip_address(host.strip("[]"))), port
    except ValueError:
        return None


def stop_deployment(
    build_dir: Path,
    pgid: int | None,
    grace: float,
    server_pid: int | None = None,
    host: str | None = None,
    port: int | None = None,
    gpu_baseline: list[dict[str, Any]] | None = None,
    trusted: Trusted | None = None,
    groups: list[int] | None = None,
) -> StopReport:
    """Stop what is provably the deployment's (trusted: the marker and start time; pgid and server_pid
    only say which of those are orphans; groups: a multi-node build's worker groups, none of them orphans)."""
    t0 = time.monotonic()
    trusted = trusted or trust_state(build_dir, None)
    server_alive = procs.owned(server_pid, trusted.marker, trusted.started_at)
    found, killed, left = procs.stop_procs(trusted.marker, trusted.started_at, grace)
    report = StopReport([p.to_dict() for p in found], [p.to_dict() for p in killed], [p.to_dict() for p in left])
    # vLLM children left without their API server, or outside the group: what a bare `kill PID` leaves.
    strays = [
        p
        for p in found
        if (server_pid and p.is_vllm and not server_alive)
        or (pgid is not None and p.pgid not in [pgid, *(groups or ())])
    ]
    if strays:
        evidence = {"processes": [p.to_dict() for p in strays], "server_pid": server_pid, "server_alive": server_alive}
        report.findings.append(_orphans_finding(evidence))
    if left:
        report.findings.append(_survivors_finding(report.left))
    report.findings += _port_findings(report, host, port)
    report.findings += _gpu_findings(report, gpu_baseline)
    for finding in report.findings:
        finding.area = AREA
    report.seconds = time.monotonic() - t0
    return report


def _orphans_finding(evidence: dict[str, Any]) -> Finding:
    return Finding(
        "TQ415",
        Severity.WARN,
        "orphaned vLLM processes of this deployment were found and stopped",
        evidence,
        "an EngineCore outlives a SIGKILLed API server (vLLM issue #55510): stop deployments with "
        "`tqdeploy down`, which stops the whole group and then anything carrying the deployment's marker",
    )


def _survivors_finding(left: list[dict[str, Any]]) -> Finding:
    return Finding(
        "TQ415",
        Severity.ERROR,
        "processes of this deployment survived SIGKILL",
        {"processes": left},
        "a process in uninterruptible sleep (state D, often a GPU driver call) exits when the call returns; "
        "if it does not, the GPU needs a reset (`nvidia-smi -r`) or the host a reboot",
    )


def _port_findings(report: StopReport, host: str | None, port: int | None) -> list[Finding]:
    """The recorded port must be free once the deployment is gone (sets report.port_free when it was checked)."""
    if port is None:
        return []  # no port recorded: nothing to check
    where = address(host, port)
    if where is None:
        return [
            Finding(
                "TQ425",
                Severity.WARN,
                "state.json's host or port is not an address: the port was not checked",
                {"host": str(host)[:80], "port": str(port)[:20]},
                "nothing to do: `tqdeploy up` writes the spec's address again",
            )
        ]
    ip, number = where
    report.port_free = _wait(lambda: port_free(ip, number), 5.0)
    if report.port_free:
        return []
    return [
        Finding(
            "TQ422",
            Severity.WARN,
            f"port {number} on {ip} is still in use after stopping",
            {"host": ip, "port": number},
            f"another process listens there now (`ss -ltnp 'sport = :{number}'`); `up` will refuse the port",
        )
    ]


def _gpu_findings(report: StopReport, baseline: list[dict[str, Any]] | None) -> list[Finding]:
    """GPU memory back near its level before `up` (sets report.gpus; None without NVML)."""
    report.gpus = gpu.gpu_memory()
    if report.gpus is None or not baseline:
        return []
    report.gpus = _settle_gpu(baseline, report.gpus)
    above = _above_baseline(baseline, report.gpus)
    if not above:
        return []
    return [
        Finding(
            "TQ416",
            Severity.WARN,
            "GPU memory did not return to its level before `up`",
            {"gpus": above},
            "a process still holds it: `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` "
            "names it; stop it by pid",
        )
    ]


def _wait(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _above_baseline(baseline: list[dict[str, Any]], now: list[dict[str, Any]]) -> list[dict[str, Any]]:
    before = {g["index"]: g["used_mib"] for g in baseline}
    return [
        {"gpu": g["index"], "used_mib": g["used_mib"], "baseline_mib": before[g["index"]]}
        for g in now
        if g["index"] in before and g["used_mib"] > before[g["index"]] + GPU_TOLERANCE_MIB
    ]


def _settle_gpu(baseline: list[dict[str, Any]], now: list[dict[str, Any]]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + GPU_SETTLE_S
    while _above_baseline(baseline, now) and time.monotonic() < deadline:
        time.sleep(0.5)
        now = gpu.gpu_memory() or now
    return now
