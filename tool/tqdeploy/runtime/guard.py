"""Processes tqdeploy never signals, whatever state.json or a marker says, and why.

pid 1 (init, or a pid namespace's init: a signal to it from inside the namespace can take the namespace
down), process group <= 1 (kill(0, ...) is the caller's group, kill(-1, ...) everyone), the caller itself,
its process group and session (the invoking shell), its ancestors, and another user's processes.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Protocol


class _Proc(Protocol):
    pid: int
    pgid: int
    sid: int
    uid: int | None


@lru_cache(maxsize=1)
def _ancestors(me: int) -> frozenset[int]:
    """The caller's parent chain (read once: an ancestor's pid stays its own while the caller lives)."""
    seen: set[int] = set()
    pid = me
    while pid > 1 and pid not in seen:
        seen.add(pid)
        try:
            stat = open(f"/proc/{pid}/stat").read()
            pid = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return frozenset(seen - {me})


def refusal(proc: _Proc) -> str | None:
    """Why proc must never be signalled by this process; None when nothing forbids it."""
    me = os.getpid()
    if proc.pid <= 1:
        return "pid 1 (init)" if proc.pid == 1 else f"pid {proc.pid}"
    if proc.pgid <= 1:
        return f"process group {proc.pgid}"
    if proc.pid == me:
        return "the caller itself"
    if proc.pgid == os.getpgrp():
        return "the caller's own process group"
    if proc.sid == os.getsid(0):
        return "the caller's own session"
    if proc.pid in _ancestors(me):
        return "an ancestor of the caller"
    if proc.uid != os.getuid():
        return "another user's process" if proc.uid is not None else "a process whose owner cannot be read"
    return None
