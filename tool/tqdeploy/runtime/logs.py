"""`logs`: the stamped server log, as vLLM printed it (or with the wall-clock stamps), since a time, followed."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from tqdeploy import safeio
from tqdeploy.errors import TQError
from tqdeploy.runtime import registry, state
from tqdeploy.runtime.interface import Runtime
from tqdeploy.runtime.logstamp import split
from tqdeploy.runtime.marker import trust_state
from tqdeploy.runtime.record import StateRecord

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


LOG_LIMIT = 64 << 20  # `logs` prints at most the last 64 MiB of a run's log
LINE_LIMIT = 1 << 20  # a "line" longer than 1 MiB is printed in pieces, never held whole


def open_log(build_dir: Path) -> BinaryIO:
    """The current run's log (server.log links to it), refused unless it is a regular file inside the build.

    A FIFO would block, /dev/zero never ends, and a link to /etc/shadow would print it: each is one line
    naming the file instead.
    """
    path = _runtime(build_dir).logs(build_dir)
    if not os.path.lexists(path):
        raise TQError(f"no log at {path}: {build_dir} was never started", f"run `tqdeploy up {build_dir}` first")
    fd = safeio.open_regular(path, "server log", within=Path(build_dir).resolve(), follow_symlinks=True)
    return os.fdopen(fd, "rb")


def read_lines(
    build_dir: Path, since: float | None, stamps: bool, follow: bool, sleep: Callable[[float], None] = time.sleep
) -> Iterator[str]:
    for when, text in read_records(build_dir, since, follow, sleep):
        yield _stamped(when, text) if stamps else text


def read_records(
    build_dir: Path, since: float | None, follow: bool, sleep: Callable[[float], None] = time.sleep
) -> Iterator[tuple[float | None, str]]:
    """(the time tqdeploy read the line or None, the line as vLLM printed it), for `logs` and `logs --json`."""
    with open_log(build_dir) as f:
        size = os.fstat(f.fileno()).st_size
        if size > LOG_LIMIT:
            f.seek(size - LOG_LIMIT)
            f.readline(LINE_LIMIT)  # the cut line's rest: print whole lines only
        end = size  # without --follow, what the file held when opened: a log that grows is not read forever
        pending = b""
        while True:
            if not follow and f.tell() >= end:
                chunk = b""
            else:
                chunk = f.readline(LINE_LIMIT if follow else max(1, min(LINE_LIMIT, end - f.tell())))
            pending += chunk
            if pending.endswith(b"\n") or len(pending) >= LINE_LIMIT:
                yield from _record(pending, since)
                pending = b""
                continue
            if chunk and not follow:
                continue
            if not follow or not _live(build_dir):
                yield from _record(pending, since)  # a last line without its newline is still a line
                return
            sleep(0.5)  # a partial line stays in pending until its newline arrives


def _record(raw: bytes, since: float | None) -> Iterator[tuple[float | None, str]]:
    if not raw:
        return
    when, text = split(raw.decode("utf-8", errors="replace"))
    if since is None or when is None or when >= since:
        yield when, text


def _runtime(build_dir: Path) -> Runtime:
    """The runtime the state names (the default one without a readable state: its log is where all log)."""

    try:
        record = state.read_record(build_dir)
    except TQError:
        record = None
    return registry.get(record.runtime if record else None)


def _live(build_dir: Path) -> bool:
    """Whether a process of the deployment is alive as its runtime tells it: by the folder's marker (a pid
    in state.json that names an unrelated live process does not keep `logs -f` following)."""

    try:
        record = state.read_record(build_dir) or StateRecord.empty()
    except TQError:
        return False
    trusted = trust_state(build_dir, record)
    return registry.get(record.runtime).facts(build_dir, record, trusted).live
