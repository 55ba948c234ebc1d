"""The processes of one deployment, read from /proc (no psutil needed on a bare GPU host).

A process belongs to the deployment only when it is provably the deployment's: its environment carries the
deployment marker (TQDEPLOY_DEPLOYMENT, runtime/marker.py: the build folder's identity, inherited by every
child), it runs as this user, and it started after the state's started_at. vLLM retitles its children
`VLLM::EngineCore` and `VLLM::Worker_...` with setproctitle, which overwrites the environ block that
/proc/PID/environ shows, so their own environ loses the marker: a process group counts as a whole when its
leader (the supervisor, which leads its own session) carries the marker, or, once the leader is gone, when
a member still does. An EngineCore outlives a SIGKILLed API server (vLLM issue #55510) in that group.

Never touched, whatever a state file says: pid 1, process group <= 1, the caller itself, its process group,
its session and its ancestors, and another user's processes (runtime/guard.py names the reason).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from tqdeploy.runtime.guard import refusal

PROC = Path("/proc")
VLLM_TITLES = ("VLLM::", "VLLM::EngineCor")
# /proc/stat's btime is whole seconds and starttime is in clock ticks: a start computed from them can be
# up to a second early; clocks step (NTP). A process started before started_at minus this is not this run's.
START_TOLERANCE_S = 2.0


@dataclass
class Proc:
    pid: int
    pgid: int
    ppid: int
    title: str  # comm, or the first word of the cmdline when that is longer (setproctitle rewrites both)
    state: str
    sid: int = 0
    uid: int | None = None  # real uid; None when /proc/PID/status could not be read
    started: float = 0.0  # epoch seconds (boot time + /proc/PID/stat field 22)

    @property
    def is_vllm(self) -> bool:
        return self.title.startswith(VLLM_TITLES)

    def to_dict(self) -> dict[str, int | str]:
        return {"pid": self.pid, "pgid": self.pgid, "title": self.title}


def boot_time() -> float:
    try:
        for line in (PROC / "stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError):
        pass
    return time.time() - time.monotonic()  # close enough where /proc/stat hides btime


def _uid(pid: int) -> int | None:
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("Uid:"):
                real, effective = line.split()[1:3]
                return int(real) if real == effective else -1  # setuid: not plainly anyone's
    except (OSError, ValueError, IndexError):
        return None
    return None


def read_proc(pid: int, boot: float | None = None) -> Proc | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        raw = (PROC / str(pid) / "cmdline").read_bytes()[:4096]
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        ppid, pgid, sid, ticks = int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None
    words = raw.split(b"\0")
    first = words[0].decode(errors="replace") if words and words[0] else comm
    title = first if first.startswith(comm) or comm.startswith("VLLM::") else comm
    started = (boot_time() if boot is None else boot) + ticks / os.sysconf("SC_CLK_TCK")
    return Proc(pid, pgid, ppid, title or comm, fields[0], sid, _uid(pid), started)


def has_marker(pid: int, marker: str) -> bool:
    try:
        env = (PROC / str(pid) / "environ").read_bytes()[: 1 << 20]
    except OSError:
        return False
    return f"TQDEPLOY_DEPLOYMENT={marker}".encode() in env.split(b"\0")


def live_procs() -> list[Proc]:
    boot = boot_time()
    procs = (read_proc(int(e.name), boot) for e in PROC.iterdir() if e.name.isdigit())
    return [p for p in procs if p is not None and p.state != "Z"]


def fits(proc: Proc, started_at: float | None) -> bool:
    return started_at is None or proc.started >= started_at - START_TOLERANCE_S


class Members:
    """Finds the deployment's processes; a group once proven stays proven for this finder's polls (a
    process group id is not reused while the group has a member, and nobody outside its session can join)."""

    def __init__(self, marker: str, started_at: float | None = None) -> None:
        self.marker, self.started_at = marker, started_at
        self.groups: set[int] = set()

    def scan(self) -> list[Proc]:
        everyone = live_procs()
        by_pid = {p.pid: p for p in everyone}
        eligible = [p for p in everyone if refusal(p) is None and fits(p, self.started_at)]
        carriers = {p.pid for p in eligible if has_marker(p.pid, self.marker)}
        for pgid in {p.pgid for p in eligible if p.pid in carriers}:
            leader = by_pid.get(pgid)
            if leader is None or leader.pid in carriers:  # a leader without the marker: not our group
                self.groups.add(pgid)
        found = [p for p in eligible if p.pid in carriers or p.pgid in self.groups]
        return sorted(found, key=lambda p: p.pid)


def deployment_procs(marker: str, started_at: float | None = None) -> list[Proc]:
    """Live (non-zombie) processes of this deployment (the caller, its group and session excluded)."""
    return Members(marker, started_at).scan()


def owned(pid: object, marker: str, started_at: float | None = None) -> bool:
    """Whether pid (a value from state.json) is a live process of this deployment: it or its group's
    leader carries the marker, and it passes the guard and the start time."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
        return False
    proc = read_proc(pid)
    if proc is None or proc.state == "Z" or refusal(proc) is not None or not fits(proc, started_at):
        return False
    if has_marker(pid, marker):
        return True
    leader = read_proc(proc.pgid)
    return leader is not None and refusal(leader) is None and has_marker(leader.pid, marker)


def alive(pid: int | None) -> bool:
    if not pid:
        return False
    proc = read_proc(pid)
    return proc is not None and proc.state != "Z"


def _same(p: Proc, boot: float) -> bool:
    """Still the process that was found (not a reused pid)."""
    now = read_proc(p.pid, boot)
    return now is not None and now.started == p.started and refusal(now) is None


def signal_all(procs: list[Proc], sig: int) -> None:
    """Signal each group whose every live member is one of procs once, as a whole (children forked since
    the scan included); anything else by pid, each checked again just before."""
    chosen = {p.pid for p in procs}
    everyone = live_procs()
    whole = {p.pgid for p in procs} - {q.pgid for q in everyone if q.pid not in chosen}
    whole = {g for g in whole if g > 1 and g != os.getpgrp()}
    for pgid in whole:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    boot = boot_time()
    for p in procs:
        if p.pgid not in whole and _same(p, boot):
            try:
                os.kill(p.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def wait_gone(members: Members, timeout: float) -> list[Proc]:
    """Poll until no process of the deployment is left or the timeout passes; what is left."""
    deadline = time.monotonic() + timeout
    left = members.scan()
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = members.scan()
    return left


def stop_procs(marker: str, started_at: float | None, grace: float) -> tuple[list[Proc], list[Proc], list[Proc]]:
    """SIGTERM the deployment, SIGKILL what is left after `grace` s. (found, killed, left)."""
    members = Members(marker, started_at)
    found = members.scan()
    if not found:
        return [], [], []
    signal_all(found, signal.SIGTERM)
    left = wait_gone(members, grace)
    killed = list(left)
    if left:
        signal_all(left, signal.SIGKILL)
        left = wait_gone(members, 5.0)
    return found, killed, left
