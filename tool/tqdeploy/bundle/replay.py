"""The host snapshot inside a bundle, so `tqdeploy doctor --snapshot bundle.tar.gz` replays the doctor.

`load_host_snapshot` is what every `--snapshot FILE` reads: a bundle or a snapshot JSON file. The bundle's tar
format stays here, in bundle/; HostSnapshot (tqdeploy.snapshot) reads JSON only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tqdeploy.bundle.archive import read_archive
from tqdeploy.errors import TQError
from tqdeploy.jsonin import loads
from tqdeploy.snapshot import SCHEMA, HostSnapshot

SNAPSHOT_MEMBER = "host/snapshot.json"


def is_bundle(path: str | Path) -> bool:
    """A gzip file (magic 1f 8b): a bundle, as opposed to a snapshot JSON file."""
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def snapshot_from_bundle(path: str | Path) -> dict[str, Any]:
    """The raw host snapshot (tqdeploy.snapshot/1) recorded in a bundle, as a dict."""
    p = Path(path)
    try:
        _, files = read_archive(p)
    except ValueError as exc:
        raise TQError(f"bundle {p} is unreadable: {exc}", "pass a file written by `tqdeploy bundle`") from None
    if SNAPSHOT_MEMBER not in files:
        raise TQError(
            f"bundle {p} holds no {SNAPSHOT_MEMBER} (its doctor collector did not run)",
            "run `tqdeploy bundle --inspect FILE` to see which collectors failed; record a new bundle",
        )

    where, fix = f"{SNAPSHOT_MEMBER} in bundle {p}", "record a new bundle"
    data = loads(files[SNAPSHOT_MEMBER], where, fix, constants=True)  # depth-bounded; NaN named by from_dict
    return data if isinstance(data, dict) else {}


def load_host_snapshot(path: str | Path) -> HostSnapshot:
    """The snapshot that `--snapshot FILE` names: replayed from a support bundle (`tqdeploy bundle`), else read
    from a snapshot JSON file. is_file first: opening a FIFO to look at its magic bytes would block."""
    p = Path(path)
    if not (p.is_file() and is_bundle(p)):
        return HostSnapshot.load(p)
    data = snapshot_from_bundle(p)  # the same schema check as for a snapshot file, with messages that name the bundle
    if data.get("schema") != SCHEMA:
        raise TQError(f"the snapshot in bundle {p} is not a {SCHEMA} document", "record a new bundle")
    try:
        return HostSnapshot.from_dict(data)
    except (TypeError, ValueError, AttributeError) as exc:
        raise TQError(
            f"the snapshot in bundle {p} has a malformed section ({str(exc)[:200]})", "record a new bundle"
        ) from None
