"""The bundle command's inputs, checked: one-line TQErrors naming the input and the fix."""

from __future__ import annotations

import re
import time
from pathlib import Path

from tqdeploy.errors import TQError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """30s, 15m, 2h, 1d, 1h30m -> seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)([smhd])", text.strip().lower())
    if not parts or "".join(n + u for n, u in parts) != text.strip().lower():
        raise TQError(f"--logs-since {text!r} is not a duration", "pass e.g. --logs-since 30m, 2h or 1d")
    seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise TQError(f"--logs-since {text!r} must be longer than 0", "pass e.g. --logs-since 30m")
    return seconds


def resolve_build_dir(build_dir: Path | None) -> Path | None:
    """An explicit BUILD_DIR must exist; without one, ./build is used if present (else a host-only bundle)."""
    if build_dir is None:
        return Path("build") if Path("build").is_dir() else None
    if not build_dir.is_dir():
        raise TQError(
            f"build directory {build_dir} does not exist or is not a directory",
            "pass the directory `tqdeploy build --out DIR` wrote, or leave it out for a host-only bundle",
        )
    return build_dir


def default_out() -> Path:
    return Path(time.strftime("tqdeploy-bundle-%Y%m%dT%H%M%SZ.tar.gz", time.gmtime()))


def resolve_out(out: Path) -> Path:
    if out.is_dir() and not out.is_symlink():
        raise TQError(f"--out {out} is a directory", "pass a file name, e.g. --out bundle.tar.gz")
    if not out.parent.is_dir():
        raise TQError(
            f"--out {out}: folder {out.parent} does not exist", "create it or pass --out in an existing folder"
        )
    return out


def check_keywords(words: tuple[str, ...]) -> None:
    short = [w for w in words if len(w.strip()) < 3]
    if short:
        raise TQError(
            f"--keyword {short[0]!r} is shorter than 3 characters",
            "pass words of 3 characters or more: shorter ones would replace parts of every word",
        )
