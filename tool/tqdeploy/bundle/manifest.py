"""A bundle's manifest.json as read back (`bundle --inspect`, `doctor --snapshot BUNDLE`): parsed with a depth
bound and checked against the shape `tqdeploy bundle` writes (bundle/build.py) before any field is used.

The bundle is a file anyone may have edited or crafted. A manifest nested 100,000 deep, a `files` that is a
list or holds strings, or a `collectors` entry that is a number once made `--inspect` exit 3; an 8 MiB
tool_version was echoed whole. Now each is one line naming the field.
"""

from __future__ import annotations

from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.jsonin import loads
from tqdeploy.snapshot_types import check_type

FIELD_LIMIT = 1000  # characters of a version, a date, a collector's name or reason
FIELDS: dict[str, Any] = {
    "schema": str,
    "tool_version": str | None,
    "created_at": str | None,
    "build_dir": str | None,
    "redacted": bool | None,
    "redactions": dict[str, int],
    "collectors": list[dict[str, Any]],
    "files": dict[str, dict[str, Any]],
}
COLLECTOR_FIELDS: dict[str, Any] = {
    "name": str,
    "status": str,
    "reason": str | None,
    "error": str | None,
    "seconds": float | None,
    "files": list[str] | None,
}
FILE_FIELDS: dict[str, Any] = {"sha256": str | None, "size": int | None}


def _check(values: dict[str, Any], fields: dict[str, Any], where: str) -> None:
    for key, hint in fields.items():
        if key in values:
            check_type(values[key], hint, f"{where}{key}")
            value = values[key]
            if isinstance(value, str) and len(value) > FIELD_LIMIT:
                raise TypeError(f"{where}{key} is {len(value)} characters, more than the {FIELD_LIMIT} it can be")


def parse_manifest(raw: bytes, where: str) -> dict[str, Any]:
    """The manifest of bundle ``where``, checked; TQError naming the field otherwise."""
    fix = "pass a bundle written by `tqdeploy bundle`, or record a new one"
    data = loads(raw, f"manifest.json of bundle {where}", fix)
    if not isinstance(data, dict):
        raise TQError(f"manifest.json of bundle {where} is not a JSON object", fix)
    try:
        _check(data, FIELDS, "")
        for i, entry in enumerate(data.get("collectors") or []):
            _check(entry, COLLECTOR_FIELDS, f"collectors[{i}].")
        for name, entry in (data.get("files") or {}).items():
            _check(entry, FILE_FIELDS, f"files[{name[:80]!r}].")
    except TypeError as exc:
        raise TQError(f"manifest.json of bundle {where}: {exc}", fix) from None
    return data
