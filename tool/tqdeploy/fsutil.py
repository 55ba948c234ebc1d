"""File system helpers: atomic writes (temp file beside the target, then rename) and the build-directory lock."""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """sha256 of a file, read in chunks (checkpoints and archives are too large to hold in memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def atomic_write_text(path: Path, text: str, mode: int | None = None) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode)


@contextmanager
def exclusive_dir(directory: Path, busy: Exception, wait_s: float = 0.0, poll_s: float = 0.1) -> Iterator[None]:
    """Hold an exclusive flock on the directory itself (no lock file is left behind).

    The one lock on a build directory: `tqdeploy build` holds it while it writes, a download holds it
    while it records its commit in the build's lock. Waits up to wait_s for another holder, then raises
    ``busy``. Closing the descriptor releases the lock, also when the process dies.
    """
    fd = os.open(directory, os.O_RDONLY)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise busy from None
                time.sleep(poll_s)
        yield
    finally:
        os.close(fd)
