"""Export: VLLM_CACHE_ROOT's files into one tar.xz whose first member is the manifest.

Deterministic: members in sorted order, owner 0/0 without names, modes 0644/0755, the files' own mtimes, so the
same volume gives the same bytes. Only regular files and folders travel; a link could name anything on the
machine, so links are left behind and listed. Refused: a volume with no caches, over MAX_FILES files or
MAX_UNPACKED bytes, or with a file that holds a secret (secrets.py). Written to a temp file beside the output and
renamed into place, so a failed export leaves no half-written artifact.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import time
from pathlib import Path
from typing import Any

from tqdeploy import __version__
from tqdeploy.errors import TQError
from tqdeploy.fsutil import file_sha256
from tqdeploy.startcache.manifest import MAX_FILES, MEMBER, PREFIX, RECEIPT, Entry, Manifest

MAX_UNPACKED = 8 << 30  # bytes: the H200 volume after a start was 89 MB; a 70B model's Triton cache is larger


def walk(volume: Path) -> tuple[list[str], list[str], list[str]]:
    """(dirs, files, links) under volume, relative, sorted; nothing is followed."""
    dirs, files, links = [], [], []
    for root, subdirs, names in os.walk(volume):
        subdirs.sort()
        base = Path(root)
        for name in subdirs + sorted(names):
            path = base / name
            rel = path.relative_to(volume).as_posix()
            if path.is_symlink():
                links.append(rel)
            elif path.is_dir():
                dirs.append(rel)
            elif path.is_file():
                files.append(rel)
            if len(files) > MAX_FILES:
                raise TQError(
                    f"{volume} holds over {MAX_FILES} files", "export a volume filled by this build's starts only"
                )
    return sorted(dirs), sorted(files), sorted(links)


def _info(name: str, kind: bytes, size: int, mtime: float) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mtime = kind, size, int(mtime)
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def build_manifest(volume: Path, facts: dict[str, str], model_files: dict[str, str], extra: dict[str, Any]) -> Manifest:
    dirs, files, links = walk(volume)
    files = [f for f in files if f != RECEIPT]  # an earlier import's record, not a cache
    entries = []
    total = 0
    for rel in files:
        size = (volume / rel).stat().st_size
        total += size
        if total > MAX_UNPACKED:
            raise TQError(
                f"{volume} holds over {MAX_UNPACKED >> 30} GiB", "export a volume of this build's caches only"
            )
        entries.append(Entry(rel, size, sha256_file(volume / rel)))
    return Manifest(
        facts=facts,
        model_files=model_files,
        files=tuple(entries),
        dirs=tuple(dirs),
        left_behind=tuple(links),
        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        tqdeploy=__version__,
        extra=extra,
    )


def write_archive(volume: Path, manifest: Manifest, out: Path) -> int:
    """Write the artifact to out (temp file + rename); returns its size in bytes. A file that changed since the
    manifest was made (a server still writing) refuses the export."""
    tmp = out.with_name(f".{out.name}.partial")
    try:
        with open(tmp, "wb") as raw, tarfile.open(fileobj=raw, mode="w:xz", preset=6) as tar:
            data = manifest.to_json()
            tar.addfile(_info(MEMBER, tarfile.REGTYPE, len(data), 0), io.BytesIO(data))
            for rel in manifest.dirs:
                tar.addfile(_info(PREFIX + rel, tarfile.DIRTYPE, 0, (volume / rel).stat().st_mtime))
            for e in manifest.files:
                path = volume / e.path
                with open(path, "rb") as fh:
                    blob = fh.read(e.bytes + 1)
                if len(blob) != e.bytes or hashlib.sha256(blob).hexdigest() != e.sha256:
                    raise TQError(
                        f"{path} changed while it was exported", "stop the deployment (`tqdeploy down`), then export"
                    )
                tar.addfile(_info(PREFIX + e.path, tarfile.REGTYPE, e.bytes, path.stat().st_mtime), io.BytesIO(blob))
        tmp.replace(out)
    except OSError as err:
        raise TQError(f"cannot write {out} ({err.strerror or err})", "give -o a writable path") from None
    finally:
        tmp.unlink(missing_ok=True)
    return out.stat().st_size


def sha256_file(path: Path) -> str:
    """Streamed: a cache file may be larger than memory allows reading whole twice."""
    return file_sha256(path)
