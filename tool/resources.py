"""Where the data that ships with tqdeploy lives (checks/, templates/, dockerfiles/)."""
from __future__ import annotations

from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent


def data_dir(name: str) -> Path:
    """checks/, templates/ or dockerfiles/ of the project (installed alongside the package)."""
    path = _ROOT / name
    if not path.is_dir():
        from tqdeploy.errors import TQError

        raise TQError(f"tqdeploy data folder {name}/ is missing at {path}", "reinstall tqdeploy with `make install`")
    return path


def doc_path(check_id: str) -> Path:
    return data_dir("checks") / "docs" / f"{check_id.upper()}.md"
