"""`logs`: the stamped server log, as vLLM printed it (or with the wall-clock stamps), since a time, followed."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tqdeploy.errors import TQError
from tqdeploy.runtime import procs, state
from tqdeploy.runtime.logstamp import split

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now: float | None = None) -> float:
    """'90s', '5m', '2h', '1d' ago, or an epoch time in seconds; returns epoch seconds."""
    m = _DURATION.match(text.strip())
    if not m:
        raise TQError(f"--since {text!r} is not a duration or an epoch time", "e.g. --since 5m, 30s, 2h")
    value = float(m.group(1)) * _UNITS[m.group(2)]
    if not m.group(2) and value > 1e9:  # an epoch time
        return value
    return (now if now is not None else time.time()) - value


def format_line(line: str, stamps: bool) -> tuple[float | None, str]:
    when, text = split(line)
    return when, _stamped(when, text) if stamps else text


def _stamped(when: float | None, text: str) -> str:
    if when is None:
        return text
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(when)) + f".{int(when % 1 * 1000):03d}Z {text}"


def read_lines(
    build_dir: Path, since: float | None, stamps: bool, follow: bool, sleep: Callable[[float], None] = time.sleep
) -> Iterator[str]:
    for when, text in read_records(build_dir, since, follow, sleep):
        yield _stamped(when, text) if stamps else text


def read_records(
    build_dir: Path, since: float | None, follow: bool, sleep: Callable[[float], None] = time.sleep
) -> Iterator[tuple[float | None, str]]:
    """(the time tqdeploy read the line or None, the line as vLLM printed it), for `logs` and `logs --json`."""
    path = state.current_log(build_dir)
    if not path.exists():
        raise TQError(f"no log at {path}: {build_dir} was never started", f"run `tqdeploy up {build_dir}` first")
    with open(path, "rb") as f:
        pending = b""
        while True:
            pending += f.readline()
            if pending.endswith(b"\n"):
                when, text = split(pending.decode("utf-8", errors="replace"))
                pending = b""
                if since is None or when is None or when >= since:
                    yield when, text
                continue
            if not follow or not _live(build_dir):
                return
            sleep(0.5)  # a partial line stays in pending until its newline arrives


def _live(build_dir: Path) -> bool:
    try:
        st = state.read_state(build_dir) or {}
    except state.CorruptState:
        return False
    return procs.alive(st.get("supervisor_pid")) or procs.alive(st.get("pid"))
