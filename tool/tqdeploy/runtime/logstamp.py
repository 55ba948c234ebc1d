"""The stamped server log: every line vLLM prints, prefixed with the wall-clock time tqdeploy read it.

vLLM's own timestamps have one-second resolution and no year, so `up` stamps each line as it is read
(`1764578703.123|INFO 12-01 08:05:03 [api_server.py:...] ...`). `profile` builds its timeline from these
stamps; a raw vLLM log (no stamps, e.g. one attached to a bug report) still parses, without wall times.
"""

from __future__ import annotations

import re
from datetime import datetime

_STAMP = re.compile(r"^(\d{9,11}\.\d{3})\|")


def stamp(text: str, when: float) -> str:
    """One log line (without its newline) as written to the stamped log."""
    return f"{when:.3f}|{text}"


def split(line: str) -> tuple[float | None, str]:
    """(wall-clock seconds or None for an unstamped line, the line as vLLM printed it)."""
    line = line.rstrip("\n")
    match = _STAMP.match(line)
    if match is None:
        return None, line
    return float(match.group(1)), line[match.end() :]


def clock_seconds(month: int, day: int, hour: int, minute: int, second: float) -> float | None:
    """vLLM's own `MM-DD hh:mm:ss` stamp as seconds (in a leap year, as the year is unknown: only differences
    are used), or None for a date no calendar has (`02-30`, `13-01`, `25:00:00`): a line of a hand-edited or
    foreign log is then untimed, never a crash."""

    try:
        return datetime(2000, month, day, hour, minute, int(second)).timestamp() + (second - int(second))
    except (ValueError, OverflowError):
        return None
