"""The checkpoint folder's manifest: where it came from, which converter wrote it, every file's size and sha256.

A folder is used only when its manifest parses, names this GGUF and this converter version, lists exactly the
files present, and every file has the size and sha256 listed. Anything else (a crash half-way, an edited or
truncated file, an older converter) reads as "not a good checkpoint", and the caller rebuilds it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tqdeploy.demomodel import facts
from tqdeploy.demomodel.facts import source_record
from tqdeploy.errors import TQError
from tqdeploy.fsutil import file_sha256
from tqdeploy.safeio import read_bytes

MANIFEST = "tqdeploy-demo-model.json"
FORMAT = "tqdeploy.demo-model/1"
MANIFEST_LIMIT = 64 * 1024


def _digest(path: Path) -> tuple[int, str]:
    return path.stat().st_size, file_sha256(path)


def write_manifest(folder: Path, names: list[str]) -> None:
    files = {}
    for name in names:
        size, sha = _digest(folder / name)
        files[name] = {"size": size, "sha256": sha}
    data = {"format": FORMAT, "converter_version": facts.CONVERTER_VERSION, "source": source_record(), "files": files}
    with open(folder / MANIFEST, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(read_bytes(folder / MANIFEST, MANIFEST_LIMIT, label="demo model manifest"))
    except (OSError, ValueError, TQError):
        return None
    return data if isinstance(data, dict) else None


def problem(folder: Path, current: bool = True) -> str | None:
    """Why folder is not a good checkpoint of the pinned GGUF by this converter; None when it is.

    current=False asks only whether the folder is intact as its manifest says (a copy of ours, unchanged,
    perhaps by an older converter): what may be replaced without losing anything of the user's."""
    if not folder.is_dir() or folder.is_symlink():
        return "missing"
    data = read_manifest(folder)
    if data is None or data.get("format") != FORMAT:
        return "no readable manifest"
    source = data.get("source")
    if current and data.get("converter_version") != facts.CONVERTER_VERSION:
        return "written by another converter version"
    if current and (not isinstance(source, dict) or source.get("sha256") != facts.GGUF_SHA256):
        return "converted from another GGUF"
    files = data.get("files")
    if not isinstance(files, dict) or not files:
        return "manifest lists no files"
    present = {p.name for p in folder.iterdir()} - {MANIFEST}
    if present != set(files):
        return "files differ from the manifest's list"
    for name, want in sorted(files.items()):
        path = folder / name
        if not isinstance(want, dict) or path.is_symlink() or not path.is_file():
            return f"{name} is not a regular file"
        if os.path.getsize(path) != want.get("size") or _digest(path)[1] != want.get("sha256"):
            return f"{name} does not match its sha256"
    return None
