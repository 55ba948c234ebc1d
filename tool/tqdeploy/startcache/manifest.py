"""The artifact's manifest (schema tqdeploy.cache/1): what the caches were made for, and every file carried.

It is the archive's first member. Read back as untrusted input: bounded, every field type-checked, every path
relative and inside the volume; a manifest that fails any of that is not an artifact.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Any

from tqdeploy.errors import TQError

SCHEMA = "tqdeploy.cache/1"
MEMBER = "tqdeploy-cache.json"  # the archive's first member
PREFIX = "vllm/"  # every cache file sits under it in the archive: VLLM_CACHE_ROOT's contents
MAX_MANIFEST = 8 << 20  # bytes; ~150 bytes an entry, room for 50,000 files
MAX_FILES = 50_000
RECEIPT = "tqdeploy-imported.json"  # on the volume: what an import wrote (profile reads it; export skips it)
RECEIPT_SCHEMA = "tqdeploy.cache-import/1"
_SHA = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Entry:
    path: str  # relative to VLLM_CACHE_ROOT, POSIX
    bytes: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    facts: dict[str, str]  # hostfacts.gather: compared on import (compare.py)
    model_files: dict[str, str]  # model file -> sha256 (or "bytes:N" for weights: see hostfacts.model_files)
    files: tuple[Entry, ...]
    dirs: tuple[str, ...]
    left_behind: tuple[str, ...] = ()  # links on the volume, never carried
    created: str = ""
    tqdeploy: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # informational only (the CPU's model name, the build)

    @property
    def total_bytes(self) -> int:
        return sum(e.bytes for e in self.files)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return {"schema": SCHEMA, **d, "files": [asdict(e) for e in self.files], "total_bytes": self.total_bytes}

    def to_json(self) -> bytes:
        return (json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n").encode("utf-8")


def safe_relpath(text: object) -> str:
    """A relative POSIX path without '..', empty parts or control characters; raises ValueError otherwise."""
    if not isinstance(text, str) or not text or len(text) > 1024 or not text.isprintable() or "\\" in text:
        raise ValueError(f"bad path {str(text)[:80]!r}")
    p = PurePosixPath(text)
    if p.is_absolute() or any(part in ("", ".", "..") for part in text.split("/")):
        raise ValueError(f"path {text[:80]!r} is absolute or leaves the volume")
    return text


def _str_map(raw: object, what: str) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise ValueError(f"{what} is not a map of strings")
    return {k[:200]: v[:4096] for k, v in raw.items()}


def parse(data: bytes, source: str) -> Manifest:
    """The manifest in data; TQError naming source when it is not one."""
    try:
        if len(data) > MAX_MANIFEST:
            raise ValueError(f"over {MAX_MANIFEST >> 20} MiB")
        raw = json.loads(data.decode("utf-8"))
        if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
            raise ValueError(f"schema is not {SCHEMA}")
        files = raw.get("files")
        if not isinstance(files, list) or len(files) > MAX_FILES:
            raise ValueError(f"files is not a list of at most {MAX_FILES}")
        entries = []
        for f in files:
            if not isinstance(f, dict) or not isinstance(f.get("bytes"), int) or f["bytes"] < 0:
                raise ValueError("a file entry has no size")
            if not isinstance(f.get("sha256"), str) or not _SHA.match(f["sha256"]):
                raise ValueError("a file entry has no sha256")
            entries.append(Entry(safe_relpath(f.get("path")), f["bytes"], f["sha256"]))
        dirs = raw.get("dirs")
        left = raw.get("left_behind", [])
        if not isinstance(dirs, list) or not isinstance(left, list):
            raise ValueError("dirs or left_behind is not a list")
        extra = raw.get("extra", {})
        return Manifest(
            facts=_str_map(raw.get("facts"), "facts"),
            model_files=_str_map(raw.get("model_files"), "model_files"),
            files=tuple(entries),
            dirs=tuple(safe_relpath(d) for d in dirs),
            left_behind=tuple(str(x)[:1024] for x in left[:MAX_FILES]),
            created=str(raw.get("created", ""))[:64],
            tqdeploy=str(raw.get("tqdeploy", ""))[:64],
            extra=extra if isinstance(extra, dict) else {},
        )
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise TQError(
            f"{source}: not a {SCHEMA} cache artifact ({str(err)[:200]})",
            "give a file `tqdeploy cache export` wrote",
        ) from None
