"""The processes of one deployment, read from /proc (no psutil needed on a bare GPU host).

A process belongs to the deployment when it is in the supervisor's process group, or when its environment
carries the deployment marker (TQDEPLOY_DEPLOYMENT=<hash of the build dir>) that every child inherits.
vLLM retitles its children `VLLM::EngineCore` and `VLLM::Worker_...` (setproctitle; the kernel's 15-byte
comm shows `VLLM::EngineCor`); an EngineCore outlives a SIGKILLed API server (vLLM issue #55510), so the
marker finds it even when the group leader is gone or state.json is lost.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
VLLM_TITLES = ("VLLM::", "VLLM::EngineCor")


@dataclass
class Proc:
    pid: int
    pgid: int
    ppid: int
    title: str  # comm, or the first word of the cmdline when that is longer (setproctitle rewrites both)
    state: str

    @property
    def is_vllm(self) -> bool:
        return self.title.startswith(VLLM_TITLES)

    def to_dict(self) -> dict:
        return {"pid": self.pid, "pgid": self.pgid, "title": self.title}


def read_proc(pid: int) -> Proc | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    words = raw.split(b"\0")
    first = words[0].decode(errors="replace") if words and words[0] else comm
    title = first if first.startswith(comm) or comm.startswith("VLLM::") else comm
    return Proc(pid=pid, pgid=int(fields[2]), ppid=int(fields[1]), title=title or comm, state=fields[0])


def has_marker(pid: int, marker: str) -> bool:
    try:
        env = (PROC / str(pid) / "environ").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    return f"TQDEPLOY_DEPLOYMENT={marker}".encode() in env.split(b"\0")


def _cwd(pid: int) -> str | None:
    try:
        return os.readlink(PROC / str(pid) / "cwd")
    except OSError:
        return None


def deployment_procs(marker: str, pgid: int | None = None, cwd: str | None = None) -> list[Proc]:
    """Live (non-zombie) processes of this deployment, this process excluded.

    Members: the recorded process group; processes with the marker in their environment and everyone in
    their process groups (setproctitle may overwrite the environment block of `VLLM::` children, so their
    own environ can lose the marker); and `VLLM::` processes whose working directory is the build dir
    (serve.sh runs there), which finds an orphaned EngineCore even without state.json.
    """
    me, mine = os.getpid(), os.getpgrp()
    procs = [p for p in (read_proc(int(e.name)) for e in PROC.iterdir() if e.name.isdigit()) if p is not None]
    procs = [p for p in procs if p.state != "Z" and p.pid != me]
    groups = {pgid} if pgid else set()
    found = {p.pid for p in procs if has_marker(p.pid, marker)}
    groups |= {p.pgid for p in procs if p.pid in found and p.pgid > 1 and p.pgid != mine}
    for p in procs:
        if p.pgid in groups or (cwd is not None and p.is_vllm and _cwd(p.pid) == cwd):
            found.add(p.pid)
    return sorted((p for p in procs if p.pid in found), key=lambda p: p.pid)


def alive(pid: int | None) -> bool:
    if not pid:
        return False
    proc = read_proc(pid)
    return proc is not None and proc.state != "Z"


def signal_all(procs: list[Proc], sig: int) -> None:
    """Signal each process group once (the whole group), then any stray process by pid."""
    groups = {p.pgid for p in procs if p.pgid > 1 and p.pgid != os.getpgrp()}
    for pgid in groups:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for p in procs:
        if p.pgid not in groups:
            try:
                os.kill(p.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def wait_gone(marker: str, pgid: int | None, timeout: float, cwd: str | None = None) -> list[Proc]:
    """Poll until no process of the deployment is left or the timeout passes; what is left."""
    deadline = time.monotonic() + timeout
    left = deployment_procs(marker, pgid, cwd)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = deployment_procs(marker, pgid, cwd)
    return left


def stop_procs(
    marker: str, pgid: int | None, grace: float, cwd: str | None = None
) -> tuple[list[Proc], list[Proc], list[Proc]]:
    """SIGTERM the deployment, SIGKILL what is left after `grace` s. (found, killed, left)."""
    found = deployment_procs(marker, pgid, cwd)
    if not found:
        return [], [], []
    signal_all(found, signal.SIGTERM)
    left = wait_gone(marker, pgid, grace, cwd)
    killed = list(left)
    if left:
        signal_all(left, signal.SIGKILL)
        left = wait_gone(marker, pgid, 5.0, cwd)
    return found, killed, left
