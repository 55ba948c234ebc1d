"""The disk under the weights: how much of them the OS page cache holds, and how fast the disk itself reads.

Standard library only (os, mmap, ctypes, time), so it runs on a bare GPU host. Neither measurement changes
the page cache: residency maps the files with libc mmap and asks `mincore` without touching a page; the read
rate uses O_DIRECT (the page cache is bypassed, nothing is evicted or filled) and never falls back to a
buffered read, which would measure memory instead of the disk. Rates are decimal GB/s, the unit of the
timeline's `weights.gb_per_s` (startfacts.py weights_figures), so the two divide into `vs_disk`.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import re
import time
from itertools import islice
from pathlib import Path

# vLLM 0.32.0 model_loader/default_loader.py _prepare_weights: "*.safetensors", then "*.bin", then "*.pt";
# weight_utils.py filter_files_not_needed_for_inference drops these training leftovers
WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt")
NOT_WEIGHTS = ("training_args.bin", "optimizer.bin", "optimizer.pt", "scheduler.pt", "scaler.pt")
MAX_FILES = 10_000
WINDOW_BYTES = 1 << 30  # residency maps a huge file one window at a time
BLOCK_BYTES = 8 << 20  # O_DIRECT block: a multiple of every logical block size (512 B / 4 KiB)
SMALL_SAMPLE_BYTES = 64 << 20  # below this a rate says more about latency than about sequential reads
MEMORY_FS = ("tmpfs", "ramfs", "devtmpfs", "hugetlbfs")
_PAGE = mmap.PAGESIZE
_OCTAL = re.compile(r"\\([0-7]{3})")
_LOW_BIT = bytes(b & 1 for b in range(256))  # mincore: bit 0 says resident, the other bits are reserved


def weight_files(model_dir: str | os.PathLike, max_files: int = MAX_FILES) -> list[Path]:
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


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    return libc


def _resident_in_window(libc, fd: int, offset: int, length: int) -> int:
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


def mincore_sees_page_cache(libc=None) -> bool:
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


def page_cache_residency(files: list[Path], max_files: int = MAX_FILES, time_budget_s: float = 2.0) -> dict:
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


def mount_of(path: str | os.PathLike) -> tuple[str | None, str | None]:
    """(mount point, filesystem type) of the mount holding `path`, from /proc/mounts (longest prefix)."""
    real = os.path.realpath(path)
    best: tuple[str | None, str | None] = (None, None)
    try:
        with open("/proc/mounts", encoding="utf-8", errors="replace") as fh:
            lines = fh.read(1 << 20).splitlines()
    except OSError:
        return best
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), fields[1])  # /proc/mounts writes a space as \040
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best[0] or ""):
            best = (point, fields[2])
    return best


def direct_read_rate(files: list[Path], max_bytes: int = 512 << 20, max_seconds: float = 3.0) -> dict:
    """Sequential O_DIRECT read of the largest files, up to `max_bytes` or `max_seconds`; decimal GB/s.
    A filesystem that refuses O_DIRECT, or one in memory, gets a `reason` instead of a rate."""
    stats = [(os.stat(p), p) for p in files if Path(p).is_file()]
    # a sparse file's holes read as zeros without touching the disk: only files mostly on disk are timed
    sized = sorted(((st.st_size, p) for st, p in stats if 0 < st.st_size <= 2 * st.st_blocks * 512), reverse=True)
    if not sized:
        sparse = any(st.st_size for st, _ in stats)
        why = "only sparse weight files (their holes read as zeros, not from the disk)" if sparse else "no weight data"
        return {"gb_per_s": None, "reason": why}
    point, fs_type = mount_of(sized[0][1])
    out: dict = {"gb_per_s": None, "fs_type": fs_type, "mount_point": point, "method": "O_DIRECT"}
    if fs_type in MEMORY_FS:
        return out | {"reason": f"weights on {fs_type}: its reads are memory reads, there is no disk to measure"}
    if not hasattr(os, "O_DIRECT"):
        return out | {"reason": "O_DIRECT is not available on this platform"}
    if not mincore_sees_page_cache():  # gVisor: O_DIRECT skips the sandbox's cache, not necessarily the host's
        out["note"] = "sandboxed kernel (gVisor-like): the host's page cache may still serve O_DIRECT reads"
    buf = mmap.mmap(-1, BLOCK_BYTES)  # page-aligned, as O_DIRECT needs
    done, used, t0 = 0, [], time.monotonic()
    try:
        for size, path in sized:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
            except OSError as exc:
                if exc.errno == errno.EINVAL:
                    return out | {"reason": "O_DIRECT not supported on this filesystem: its reads are memory reads"}
                return out | {"reason": f"{path}: {exc.strerror}"}
            used.append(str(path))
            try:
                done += _read_direct(fd, buf, size, max_bytes - done, t0 + max_seconds)
            except OSError as exc:
                reason = "O_DIRECT not supported on this filesystem" if exc.errno == errno.EINVAL else exc.strerror
                return out | {"reason": f"O_DIRECT read failed: {reason}"}
            finally:
                os.close(fd)
            if done >= max_bytes or time.monotonic() >= t0 + max_seconds:
                break
    finally:
        buf.close()
    seconds = time.monotonic() - t0
    if not done:
        return out | {"bytes": 0, "seconds": round(seconds, 6), "reason": f"nothing read within {max_seconds} s"}
    if done < SMALL_SAMPLE_BYTES:
        out["sample_note"] = f"small sample ({done / 1e6:.1f} MB): latency weighs on it, a long read may be faster"
    return out | {
        "bytes": done,
        "seconds": round(seconds, 6),
        "gb_per_s": round(done / 1e9 / seconds, 3),
        "files": used,
    }


def _read_direct(fd: int, buf: mmap.mmap, size: int, limit: int, deadline: float) -> int:
    offset = 0
    while offset < size and offset < limit and time.monotonic() < deadline:
        n = os.preadv(fd, [buf], offset)
        offset += max(n, 0)
        if n < len(buf):  # end of file (a short read mid-file would leave the next offset unaligned)
            break
    return offset


def measure(model_dir: str | os.PathLike) -> dict:
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
