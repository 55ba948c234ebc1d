"""The disk under the weights: how much of them the OS page cache holds (here), and how fast the disk itself
reads (diskread.py, re-exported). Standard library only (os, mmap, ctypes, time), so it runs on a bare GPU host.
Neither measurement changes the page cache: residency maps the files with libc mmap and asks `mincore` without
touching a page; the read rate uses O_DIRECT.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import time
from itertools import islice
from pathlib import Path

from tqdeploy.profile import diskread
from tqdeploy.profile.diskread import MEMORY_FS, mount_of
from tqdeploy.profile.jsontypes import JSONObject

__all__ = ["MEMORY_FS", "direct_read_rate", "measure", "mount_of", "page_cache_residency", "weight_files"]

# vLLM 0.32.0 model_loader/default_loader.py _prepare_weights: "*.safetensors", then "*.bin", then "*.pt";
# weight_utils.py filter_files_not_needed_for_inference drops these training leftovers
WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt")
NOT_WEIGHTS = ("training_args.bin", "optimizer.bin", "optimizer.pt", "scheduler.pt", "scaler.pt")
MAX_FILES = 10_000
WINDOW_BYTES = 1 << 30  # residency maps a huge file one window at a time
_PAGE = mmap.PAGESIZE
_LOW_BIT = bytes(b & 1 for b in range(256))  # mincore: bit 0 says resident, the other bits are reserved


def weight_files(model_dir: str | os.PathLike[str], max_files: int = MAX_FILES) -> list[Path]:
    """The checkpoint files vLLM would read, sorted; symlinks followed (HF caches link blobs)."""
    folder = Path(model_dir)
    if not folder.is_dir():
        return []
    for pattern in WEIGHT_PATTERNS:
        found = islice((p for p in folder.glob(pattern) if p.name not in NOT_WEIGHTS and p.is_file()), max_files)
        files = sorted(found)
        if files:
            return files
    return []


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    return libc


def _resident_in_window(libc: ctypes.CDLL, fd: int, offset: int, length: int) -> int:
    """Resident bytes of [offset, offset + length) (offset page-aligned); the pages are never touched."""
    addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
    if addr in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap failed")
    try:
        pages = (length + _PAGE - 1) // _PAGE
        vec = ctypes.create_string_buffer(pages)
        if libc.mincore(ctypes.c_void_p(addr), length, vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore failed")
        flags = vec.raw[:pages].translate(_LOW_BIT)
        resident = flags.count(1) * _PAGE
        if flags[-1] == 1:  # the last page is only partly file
            resident -= pages * _PAGE - length
        return resident
    finally:
        libc.munmap(ctypes.c_void_p(addr), length)


def mincore_sees_page_cache(libc: ctypes.CDLL | None = None) -> bool:
    """False on kernels whose mincore answers "resident" for every mapped page: gVisor does
    (pkg/sentry/syscalls/linux/sys_mmap.go Mincore: "Pretend that all mapped pages are resident in core").
    Probe: an anonymous mapping never touched has no page in memory on Linux."""
    libc = libc or _libc()
    length = 16 * _PAGE
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    addr = libc.mmap(None, length, mmap.PROT_READ, flags, -1, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        return False
    try:
        vec = ctypes.create_string_buffer(16)
        return libc.mincore(ctypes.c_void_p(addr), length, vec) == 0 and vec.raw[:16].translate(_LOW_BIT).count(1) == 0
    finally:
        libc.munmap(ctypes.c_void_p(addr), length)


def page_cache_residency(files: list[Path], max_files: int = MAX_FILES, time_budget_s: float = 2.0) -> JSONObject:
    """Bytes of `files` the OS page cache holds now. `partial` when the file cap or time budget stopped it
    early: `fraction` is then over the bytes checked. None (with `error`) where mincore cannot tell."""
    libc, t0 = _libc(), time.monotonic()
    if not mincore_sees_page_cache(libc):
        why = "mincore reports every mapped page resident on this kernel (a sandbox such as gVisor)"
        total = sum(os.stat(p).st_size for p in files[:max_files] if Path(p).is_file())
        return {
            "files": len(files),
            "bytes": total,
            "bytes_checked": 0,
            "bytes_resident": None,
            "fraction": None,
            "partial": False,
            "seconds": 0.0,
            "error": f"cannot measure: {why}",
        }
    total = checked = resident = 0
    out_of_time, error = False, None
    for path in files[:max_files]:
        try:
            size = os.stat(path).st_size
            total += size
            if out_of_time or size == 0:
                continue
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            error = f"{path}: {exc.strerror or exc}"
            continue
        try:
            for offset in range(0, size, WINDOW_BYTES):
                if time.monotonic() - t0 > time_budget_s:
                    out_of_time = True
                    break
                length = min(WINDOW_BYTES, size - offset)
                resident += _resident_in_window(libc, fd, offset, length)
                checked += length
        except OSError as exc:
            error = f"{path}: {exc.strerror or exc}"
        finally:
            os.close(fd)
    return {
        "files": len(files),
        "bytes": total,
        "bytes_checked": checked,
        "bytes_resident": resident,
        "fraction": round(resident / checked, 4) if checked else None,
        "partial": out_of_time or len(files) > max_files,
        "seconds": round(time.monotonic() - t0, 3),
        "error": error,
    }


def direct_read_rate(files: list[Path], max_bytes: int = 512 << 20, max_seconds: float = 3.0) -> JSONObject:
    """diskread.direct_read_rate, told whether this kernel's page-cache answers can be trusted."""
    return diskread.direct_read_rate(files, max_bytes, max_seconds, sandboxed=not mincore_sees_page_cache())


def measure(model_dir: str | os.PathLike[str]) -> JSONObject:
    """Both figures for one checkpoint folder: residency first (the direct read must not be what warmed it)."""
    files = weight_files(model_dir)
    return {
        "model_dir": str(model_dir),
        "residency": page_cache_residency(files),
        "direct_read": direct_read_rate(files),
    }


if __name__ == "__main__":  # on a bare host: PYTHONPATH=tool python3 -m tqdeploy.profile.disk MODEL_DIR
    import json
    import sys

    print(json.dumps(measure(sys.argv[1]), indent=2))
