"""The disk's own sequential read rate under the weights, with O_DIRECT: the page cache is bypassed (nothing is
evicted or filled) and there is never a fallback to a buffered read, which would time memory instead of the
disk. Standard library only, like disk.py (which re-exports it). Rates are decimal GB/s, the unit of the
timeline's `weights.gb_per_s` (startfacts.py weights_figures), so the two divide into `vs_disk`.
"""

from __future__ import annotations

import errno
import mmap
import os
import re
import time
from pathlib import Path

from tqdeploy.profile.jsontypes import JSONObject

BLOCK_BYTES = 8 << 20  # O_DIRECT block: a multiple of every logical block size (512 B / 4 KiB)
SMALL_SAMPLE_BYTES = 64 << 20  # below this a rate says more about latency than about sequential reads
MEMORY_FS = ("tmpfs", "ramfs", "devtmpfs", "hugetlbfs")
_OCTAL = re.compile(r"\\([0-7]{3})")


def mount_of(path: str | os.PathLike[str]) -> tuple[str | None, str | None]:
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


def direct_read_rate(
    files: list[Path], max_bytes: int = 512 << 20, max_seconds: float = 3.0, sandboxed: bool = False
) -> JSONObject:
    """Sequential O_DIRECT read of the largest files, up to `max_bytes` or `max_seconds`; decimal GB/s.
    A filesystem that refuses O_DIRECT, or one in memory, gets a `reason` instead of a rate.
    `sandboxed`: the kernel fakes mincore (disk.mincore_sees_page_cache), so a note says what O_DIRECT may not skip."""
    stats = [(os.stat(p), p) for p in files if Path(p).is_file()]
    # a sparse file's holes read as zeros without touching the disk: only files mostly on disk are timed
    sized = sorted(((st.st_size, p) for st, p in stats if 0 < st.st_size <= 2 * st.st_blocks * 512), reverse=True)
    if not sized:
        sparse = any(st.st_size for st, _ in stats)
        why = "only sparse weight files (their holes read as zeros, not from the disk)" if sparse else "no weight data"
        return {"gb_per_s": None, "reason": why}
    point, fs_type = mount_of(sized[0][1])
    out: JSONObject = {"gb_per_s": None, "fs_type": fs_type, "mount_point": point, "method": "O_DIRECT"}
    if fs_type in MEMORY_FS:
        return out | {"reason": f"weights on {fs_type}: its reads are memory reads, there is no disk to measure"}
    if not hasattr(os, "O_DIRECT"):
        return out | {"reason": "O_DIRECT is not available on this platform"}
    if sandboxed:  # gVisor: O_DIRECT skips the sandbox's cache, not necessarily the host's
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


def drop_own_file_from_page_cache(path: str | os.PathLike[str]) -> None:
    """For benchmarks, tests and recording scripts: evict a file they wrote themselves from the page cache
    (posix_fadvise DONTNEED; no root needed). profile itself never evicts anything."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
