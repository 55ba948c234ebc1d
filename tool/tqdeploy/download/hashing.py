"""File digests: sha256 (what LFS metadata records) and the git blob id (what small files are known by).

Many files are hashed at once on threads: hashlib releases the GIL while it digests a buffer larger
than 2 KiB, so threads use every core and overlap disk reads with hashing. Ctrl-C stops every
thread at its next 4 MiB read instead of waiting for tens of GB to be hashed.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tqdeploy.errors import TQError

CHUNK = 4 * 1024 * 1024  # large reads keep the per-call overhead negligible next to hashing


class HashCancelled(Exception):
    """digest_files was interrupted: the worker stops reading."""


@dataclass(frozen=True)
class Digest:
    size: int
    sha256: str
    git_oid: str  # sha1 of "blob <size>\0" + content, as git and the Hub's blobId compute it


def digest_file(
    path: Path,
    on_bytes: Callable[[int], None] | None = None,
    with_git_oid: bool = True,
    cancel: threading.Event | None = None,
) -> Digest:
    """sha256 (and the git blob id) of one file in a single read pass."""
    size = os.path.getsize(path)
    sha256 = hashlib.sha256()
    git = hashlib.sha1(f"blob {size}\0".encode()) if with_git_oid else None
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while True:
            if cancel is not None and cancel.is_set():
                raise HashCancelled()
            n = fh.readinto(buf)
            if not n:
                break
            chunk = view[:n]
            sha256.update(chunk)
            if git is not None:
                git.update(chunk)
            if on_bytes is not None:
                on_bytes(n)
    return Digest(size=size, sha256=sha256.hexdigest(), git_oid=git.hexdigest() if git else "")


def default_workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def digest_files(
    paths: Iterable[Path],
    *,
    workers: int | None = None,
    on_bytes: Callable[[int], None] | None = None,
    with_git_oid: bool = False,
) -> dict[Path, Digest]:
    """Digest many files in parallel; ``on_bytes`` is called from worker threads as data is read.

    A file that cannot be read is a TQError naming it. On any exception in the caller's thread
    (KeyboardInterrupt included) the workers stop at their next read before it propagates.
    """
    paths = list(paths)
    if not paths:
        return {}
    out: dict[Path, Digest] = {}
    cancel = threading.Event()
    pool = ThreadPoolExecutor(max_workers=min(workers or default_workers(), len(paths)))
    try:
        futures = {pool.submit(digest_file, p, on_bytes, with_git_oid, cancel): p for p in paths}
        for future in as_completed(futures):
            try:
                out[futures[future]] = future.result()
            except OSError as err:
                raise TQError(
                    f"cannot read {futures[future]}: {err.strerror or err}",
                    "check that the file is readable by this user (or delete it to fetch it again)",
                ) from None
    except BaseException:
        cancel.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return out
