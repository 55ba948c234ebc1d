"""Import: the artifact extracted beside VLLM_CACHE_ROOT, checked member by member, then renamed into place.

Every member must be one the manifest lists (a folder, or a regular file of the listed size whose sha256 matches
once written), under the archive's vllm/ prefix, extracted with tarfile's "data" filter (no absolute paths, no
'..', no links, no devices); the total is bounded by the manifest's and by MAX_UNPACKED. Anything else refuses the
whole import, and the partial folder is removed: the volume is as it was.

The volume is replaced only when it holds no files (a fresh build: serve.sh made its empty folders) or only the
files an earlier import wrote, unchanged (RECEIPT lists them with their sha256). A volume a start has written to
is refused: tqdeploy cannot prove those files are its own.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.safeio import read_text
from tqdeploy.startcache.manifest import (
    MAX_MANIFEST,
    MEMBER,
    PREFIX,
    RECEIPT,
    RECEIPT_SCHEMA,
    Manifest,
    parse,
    safe_relpath,
)
from tqdeploy.startcache.pack import MAX_UNPACKED, sha256_file, walk
from tqdeploy.startcache.secrets import holds_secret

MAX_ARCHIVE = 4 << 30


def _open(archive: Path) -> tarfile.TarFile:
    if not archive.is_file() or archive.stat().st_size > MAX_ARCHIVE:
        raise TQError(f"{archive}: not a file of at most {MAX_ARCHIVE >> 30} GiB", "give a `cache export` artifact")
    try:
        return tarfile.open(archive, mode="r|xz")
    except (tarfile.TarError, OSError, EOFError) as err:
        raise TQError(
            f"{archive}: not a tar.xz artifact ({err})", "give a file `tqdeploy cache export` wrote"
        ) from None


def read_manifest(archive: Path) -> Manifest:
    try:
        with _open(archive) as tar:
            first = tar.next()
            if first is None or first.name != MEMBER or not first.isreg() or first.size > MAX_MANIFEST:
                raise TQError(f"{archive}: its first member is not {MEMBER}", "give a `cache export` artifact")
            fh = tar.extractfile(first)
            return parse(fh.read(MAX_MANIFEST + 1) if fh else b"", str(archive))
    except (tarfile.TarError, OSError, EOFError) as err:
        raise TQError(f"{archive}: unreadable ({err})", "export the caches again") from None


def read_receipt(volume: Path) -> dict[str, Any] | None:
    try:
        raw = json.loads(read_text(volume / RECEIPT, MAX_MANIFEST, "import receipt", within=volume))
    except (TQError, OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) and raw.get("schema") == RECEIPT_SCHEMA else None


def replaceable(volume: Path) -> bool:
    """Whether the volume holds nothing but folders and the unchanged files of an earlier import."""
    if volume.is_symlink() or (volume.exists() and not volume.is_dir()):
        return False
    if not volume.exists():
        return True
    _dirs, files, links = walk(volume)
    if links:
        return False
    if not files:
        return True
    receipt = read_receipt(volume)
    known = receipt.get("files") if receipt else None
    if not isinstance(known, dict):
        return False
    return all(rel == RECEIPT or (known.get(rel) and sha256_file(volume / rel) == known[rel]) for rel in files)


def _check_member(member: tarfile.TarInfo, manifest: Manifest, sizes: dict[str, int], dirs: set[str]) -> str:
    if not member.name.startswith(PREFIX):
        raise ValueError(f"member {member.name[:80]!r} is outside {PREFIX}")
    rel = safe_relpath(member.name[len(PREFIX) :].rstrip("/"))
    if member.isdir():
        if rel not in dirs:
            raise ValueError(f"folder {rel[:80]!r} is not in the manifest")
    elif not member.isreg():
        raise ValueError(f"member {rel[:80]!r} is a link or a device, not a file")
    elif rel not in sizes:
        raise ValueError(f"file {rel[:80]!r} is not in the manifest")
    elif sizes[rel] != member.size:
        raise ValueError(f"member {rel[:80]!r} is {member.size} bytes, the manifest says {sizes.get(rel)}")
    return rel


def extract(archive: Path, manifest: Manifest, volume: Path, literals: list[bytes]) -> dict[str, Any]:
    """Extract into volume (see the module's rules); returns counts. Raises TQError and leaves volume as it was."""
    if not replaceable(volume):
        raise TQError(
            f"{volume} already holds caches tqdeploy did not import (a start wrote there)",
            "import into a build that has not started yet, or remove that cache volume yourself first",
        )
    if manifest.total_bytes > MAX_UNPACKED:
        raise TQError(f"{archive}: unpacks to over {MAX_UNPACKED >> 30} GiB", "export a smaller cache")
    sizes = {e.path: e.bytes for e in manifest.files}
    wanted = {e.path: e.sha256 for e in manifest.files}
    dirs = set(manifest.dirs)
    partial = volume.parent / f".{volume.name}.import-partial"
    old = volume.parent / f".{volume.name}.import-old"
    shutil.rmtree(partial, ignore_errors=True)  # a crashed import's leftover: named by us, never the volume
    partial.mkdir(parents=True)
    seen: set[str] = set()
    try:
        with _open(archive) as tar:
            for member in tar:
                if member.name == MEMBER and not seen:
                    continue
                rel = _check_member(member, manifest, sizes, dirs)
                tar.extract(member, partial, filter="data")
                if member.isreg():
                    path = partial / PREFIX / rel
                    if rel in seen or sha256_file(path) != wanted[rel]:
                        raise ValueError(f"member {rel[:80]!r} is not the file the manifest lists")
                    why = holds_secret(path.read_bytes(), literals)
                    if why:
                        raise ValueError(f"member {rel[:80]!r} holds {why}")
                    seen.add(rel)
        missing = set(wanted) - seen
        if missing:
            raise ValueError(f"{len(missing)} file(s) of the manifest are missing, e.g. {sorted(missing)[0][:80]!r}")
        root = partial / PREFIX.rstrip("/")
        root.mkdir(exist_ok=True)
        receipt = {"schema": RECEIPT_SCHEMA, "archive": archive.name, "facts": manifest.facts,
                   "dirs": list(manifest.dirs), "files": wanted}  # fmt: skip
        (root / RECEIPT).write_text(json.dumps(receipt, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        _swap(root, volume, old)
    except (ValueError, tarfile.TarError, EOFError) as err:
        raise TQError(f"{archive}: refused ({str(err)[:300]})", "export the caches again from a clean build") from None
    except OSError as err:
        raise TQError(
            f"{archive}: cannot import into {volume} ({err})", "check the volume's free space and rights"
        ) from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return {"files": len(seen), "bytes": manifest.total_bytes, "dirs": len(dirs), "volume": str(volume)}


def _swap(new: Path, volume: Path, old: Path) -> None:
    """new becomes volume; the old volume (checked replaceable) is moved aside first and put back on failure."""
    shutil.rmtree(old, ignore_errors=True)
    had = volume.exists()
    if had:
        volume.rename(old)
    try:
        new.rename(volume)
    except OSError:
        if had:
            old.rename(volume)
        raise
    shutil.rmtree(old, ignore_errors=True)
