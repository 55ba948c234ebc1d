"""tqdeploy-manifest.json: what a model folder holds and where each file came from.

Written next to the files at the start of a download (every selected file listed, ``endpoint``
null until it is in place and verified) and rewritten atomically after each file, so an
interrupted download can say offline exactly which files are still missing.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.download.selection import is_unsafe_path
from tqdeploy.errors import TQError, has_control
from tqdeploy.fsutil import atomic_write_text
from tqdeploy.model.jsonfile import MAX_INDEX_BYTES, read_json_file

MANIFEST_NAME = "tqdeploy-manifest.json"
SCHEMA = "tqdeploy.download.manifest/1"


@dataclass
class ManifestFile:
    path: str  # repo path, "/"-separated, relative to the model folder
    size: int
    sha256: str | None  # from the repository's LFS metadata; for small files computed once verified
    git_oid: str | None  # the repository's blob id (small files are verified against it)
    lfs: bool
    endpoint: str | None = None  # the mirror that served it; null while missing

    @property
    def present(self) -> bool:
        return self.endpoint is not None


@dataclass
class Manifest:
    repo: str
    revision: str  # as asked for (branch, tag or commit)
    commit: str  # what it resolved to
    files: list[ManifestFile] = field(default_factory=list)
    complete: bool = False

    def file(self, path: str) -> ManifestFile | None:
        return next((f for f in self.files if f.path == path), None)

    def entry(self, path: str) -> ManifestFile:
        """The entry of a path this manifest lists (KeyError for one it does not)."""
        found = self.file(path)
        if found is None:
            raise KeyError(path)
        return found

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"schema": SCHEMA, **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        if data.get("schema") != SCHEMA:
            raise ValueError(f"schema is {data.get('schema')!r}, expected {SCHEMA!r}")

        files = [ManifestFile(**f) for f in data["files"]]
        for f in files:
            # Every path is hashed and opened under the folder: one that leaves it is a tampered manifest.
            if not isinstance(f.path, str) or is_unsafe_path(f.path):
                raise ValueError(f"file path {str(f.path)[:120]!r} is not inside the model folder")
            if has_control(f.path):  # a newline or escape never names a shard (listing_http refuses it too)
                raise ValueError(f"file path {f.path[:120]!r} holds a control character")
            if isinstance(f.size, bool) or not isinstance(f.size, int) or f.size < 0:
                raise ValueError(f"{f.path}: size {f.size!r} is not a byte count")
        strings = all(isinstance(data[k], str) for k in ("repo", "revision", "commit"))
        if not strings:
            raise ValueError("repo, revision and commit must be strings")
        return cls(data["repo"], data["revision"], data["commit"], files, bool(data.get("complete")))


def manifest_path(dest: Path) -> Path:
    return Path(dest) / MANIFEST_NAME


def load_manifest(dest: Path) -> Manifest | None:
    """The manifest in ``dest``; None when there is none; TQError when it is unreadable."""
    path = manifest_path(dest)
    if not path.is_file():
        return None

    fix = "delete it and run `tqdeploy download` again to rebuild it"
    data = read_json_file(path, MAX_INDEX_BYTES, fix)  # capped, no NaN, bounded nesting
    try:
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return Manifest.from_dict(data)
    except (ValueError, KeyError, TypeError) as err:
        raise TQError(
            f"{path} is not a tqdeploy manifest ({str(err)[:200]})",
            fix,
        ) from None


def save_manifest(dest: Path, manifest: Manifest) -> None:
    text = json.dumps(manifest.to_dict(), indent=2, sort_keys=True) + "\n"
    atomic_write_text(manifest_path(dest), text)
