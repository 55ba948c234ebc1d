"""The bundle archive: redacted contents in, a deterministic tar.gz with manifest.json out.

Deterministic: entries sorted by path, one mtime (the bundle's time), no owner names, gzip header with the
same mtime; the same inputs give the same bytes. Binary contents are dropped; each file is capped and the
archive as a whole too, and every truncation or drop is written in the manifest.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.bundle.manifest import parse_manifest
from tqdeploy.bundle.unpack import Budget, TooLarge, members
from tqdeploy.safeio import FileRefused, read_bytes

MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_TOTAL_BYTES = 24 * 1024 * 1024
TAIL_KEPT = ("logs/",)  # for these the end is what matters: truncation keeps the tail


@dataclass
class Entries:
    files: dict[str, bytes] = field(default_factory=dict)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    dropped: list[dict[str, str]] = field(default_factory=list)

    def add(self, path: str, data: bytes) -> None:
        record: dict[str, Any] = {}
        if len(data) > MAX_FILE_BYTES:
            record = {"truncated": True, "original_size": len(data)}
            data = data[-MAX_FILE_BYTES:] if path.startswith(TAIL_KEPT) else data[:MAX_FILE_BYTES]
        if sum(len(d) for d in self.files.values()) + len(data) > MAX_TOTAL_BYTES:
            self.dropped.append({"path": path, "reason": f"archive size cap ({MAX_TOTAL_BYTES} bytes) reached"})
            return
        self.files[path] = data
        record.update({"size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
        self.records[path] = record

    def drop(self, path: str, reason: str) -> None:
        self.dropped.append({"path": path, "reason": reason})


def as_text(content: bytes) -> str | None:
    """UTF-8 text, or None for binary content (a NUL byte or not UTF-8)."""
    if b"\0" in content:
        return None
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def dump_json(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode("utf-8")


def archive_bytes(manifest: dict[str, Any], files: dict[str, bytes], mtime: int) -> bytes:
    """manifest.json first, then the files in path order, as gzip bytes (the caller writes them atomically)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in [("manifest.json", dump_json(manifest)), *sorted(files.items())]:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=mtime, compresslevel=6) as gz:
        gz.write(buf.getvalue())
    return out.getvalue()


def read_archive(path: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """(manifest, {path: bytes}) of a bundle, bounded (tqdeploy.bundle.unpack); ValueError for anything else."""
    try:
        raw = read_bytes(path, 256 * 1024 * 1024, "bundle", follow_symlinks=True)
        files = dict(members(raw, Budget())) if raw[:2] == b"\x1f\x8b" else {}
    except (FileRefused, TooLarge, tarfile.TarError, OSError, EOFError) as exc:
        raise ValueError(f"not a tar.gz archive ({exc})") from None
    if "manifest.json" not in files:
        raise ValueError("no manifest.json in it")

    return parse_manifest(files.pop("manifest.json"), str(path)), files  # depth and shape checked
