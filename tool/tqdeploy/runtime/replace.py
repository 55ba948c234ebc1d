"""`up NEW --replace OLD`: blue-green behind nginx with no failed request.

1. start NEW (its own port) and wait until it is ready; OLD keeps serving (a failed NEW leaves OLD alone);
2. point the rendered nginx upstream (`upstream <name>_vllm { server HOST:PORT; }` in the conf nginx
   includes) at NEW, atomically, and reload nginx (SIGHUP to its master: new workers take the new
   upstream, old workers finish their requests on OLD and exit);
3. drain: wait until the old workers are gone and OLD reports no running or waiting request
   (`vllm:num_requests_running` / `vllm:num_requests_waiting` on /metrics), then stop OLD.
"""

from __future__ import annotations

import math
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.fsutil import atomic_write_text
from tqdeploy.runtime import http
from tqdeploy.runtime.deployment import load_deployment
from tqdeploy.runtime.nginxconf import find_upstream, proven_master, read_conf
from tqdeploy.runtime.procs import PROC, alive, read_proc


@dataclass
class SwitchReport:
    nginx_conf: str
    old_upstream: str
    new_upstream: str
    reload_pid: int
    drained_s: float = 0.0
    old_workers: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


@dataclass(frozen=True)
class SwitchPlan:
    """What `up --replace` checked before starting anything: the conf to rewrite and the nginx that reads it."""

    conf: Path
    pid_file: Path
    master: int
    old_upstream: str


def plan_switch(conf: Path, pid_file: Path) -> SwitchPlan:
    """Every precondition of the switch, refused in one line before the new server starts: the conf is a regular
    file with one live `upstream <name>_vllm` block, and the pid file names the nginx master that includes it."""

    conf = Path(os.path.realpath(conf))  # a sites-enabled link: the file it names is the one rewritten
    upstream = find_upstream(read_conf(conf), conf)
    if not os.access(conf.parent, os.W_OK | os.X_OK):  # the rewrite is a temp file beside it, renamed into place
        raise TQError(
            f"cannot rewrite {conf}: its folder {conf.parent} is not writable by this user",
            "run `up --replace` as the user who owns the nginx conf (e.g. with sudo)",
        )
    return SwitchPlan(conf, Path(pid_file), proven_master(Path(pid_file), conf), upstream.address)


def rewrite_upstream(conf: Path, new: str) -> str:
    """Point the conf's live vLLM upstream at new (host:port); returns the old server. Atomic rename."""

    text = read_conf(conf)
    found = find_upstream(text, conf)
    try:
        atomic_write_text(conf, text[: found.start] + new + text[found.end :], mode=os.stat(conf).st_mode & 0o777)
    except OSError as err:
        raise TQError(f"cannot rewrite {conf}: {err.strerror}", "check the conf's folder and disk") from None
    return found.address


def workers(master: int) -> list[int]:
    out = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            p = read_proc(int(entry.name))
            if p is not None and p.ppid == master and p.state != "Z":
                out.append(p.pid)
    return sorted(out)


def in_flight(base_url: str, key: str | None = None) -> float | None:
    """Running + waiting requests from vLLM's /metrics; None when it does not answer them (no answer, a
    refused key, an answer too large or without those gauges as numbers)."""
    text = http.metrics_text(base_url, key)
    if text is None:
        return None
    total, seen = 0.0, False
    for line in text.splitlines():
        if line.startswith(("vllm:num_requests_running", "vllm:num_requests_waiting")):
            try:
                value = float(line.rsplit(" ", 1)[1])
            except (ValueError, IndexError):
                return None
            if not math.isfinite(value) or value < 0:
                return None
            total, seen = total + value, True
    return total if seen else None


def old_key(old_build: Path) -> str | None:
    """The old deployment's key, from its build's spec (what its serve.sh exported), for the drain's /metrics."""

    try:
        return http.read_key(load_deployment(old_build).api_key_file)
    except (TQError, OSError, ValueError, KeyError):
        return None


def _reloaded(master: int, before: list[int], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if set(workers(master)) - set(before):
            return True
        time.sleep(0.1)
    return False


def switch_and_drain(
    plan: SwitchPlan, new_upstream: str, old_base_url: str, drain_timeout: float, old_key: str | None = None
) -> SwitchReport:
    """``old_key``: the old deployment's API key, sent to its own origin only (net.Client)."""

    conf = plan.conf
    master = proven_master(plan.pid_file, conf)  # again, right before the signal: nginx may have restarted
    before = workers(master)
    old = rewrite_upstream(conf, new_upstream)
    os.kill(master, signal.SIGHUP)  # nginx's reload: re-read the conf, start new workers, retire the old
    if not _reloaded(master, before):
        rewrite_upstream(conf, old)  # nginx kept the old conf (a syntax error?): leave both as they were
        raise TQError(
            f"nginx (master {master}) did not start new workers after the reload; {conf} restored",
            "run `nginx -t` to see why it rejected the configuration; the old deployment still serves",
        )
    t0 = time.monotonic()
    deadline = t0 + drain_timeout
    while time.monotonic() < deadline:
        retiring = [w for w in before if alive(w)]
        busy = in_flight(old_base_url, old_key)
        if not retiring and not busy:
            break
        time.sleep(0.2)
    return SwitchReport(str(conf), old, new_upstream, master, round(time.monotonic() - t0, 2), before)
