"""Benchmark: profile's disk probe (tqdeploy/profile/disk.py) against the tools an operator would reach for
on the same file in the same run: `dd iflag=direct` for the O_DIRECT read rate, util-linux `fincore` for the
page-cache residency. Goal: the same figures (ratio ~1.0), since profile's `vs_disk` divides by them.

The file (TQDEPLOY_BENCH_DISK_MB, default 1024 MB of random bytes) is written under .cache/ on the repo's
filesystem, fsync'd, measured, then dropped from the page cache (posix_fadvise on this file only) and measured
again, and deleted. Reads alternate between the two tools over five rounds, each going first in turn (this
machine's virtual disk differs by up to 30% from one read to the next); medians compared.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench import REPO, Row
from tqdeploy.profile import disk
from tqdeploy.profile.diskread import drop_own_file_from_page_cache

SIZE_MB = int(os.environ.get("TQDEPLOY_BENCH_DISK_MB", "1024"))
ROUNDS = 5
_DD_RATE = re.compile(r"^(\d+) bytes .* copied, ([\d.]+) s,", re.M)


def _write(path: Path) -> None:
    chunk = os.urandom(8 << 20)
    with open(path, "wb") as fh:
        for _ in range(max(1, SIZE_MB // 8)):
            fh.write(chunk)
        fh.flush()
        os.fsync(fh.fileno())


def _dd_rate(path: Path) -> float:
    proc = subprocess.run(
        ["dd", f"if={path}", "of=/dev/null", "bs=8M", "iflag=direct"], capture_output=True, text=True, timeout=120
    )
    m = _DD_RATE.search(proc.stderr)
    if proc.returncode != 0 or not m:
        raise RuntimeError(f"dd failed: {proc.stderr.strip()[-300:]}")
    return int(m.group(1)) / 1e9 / float(m.group(2))


def _fincore(path: Path) -> float:
    out = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--output", "RES,SIZE", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    return min(1.0, int(out[0]) / int(out[1]))


def run() -> list[Row]:

    if not (shutil.which("dd") and shutil.which("fincore")):
        print("bench disk: needs dd and fincore (coreutils, util-linux)")
        return []
    (REPO / ".cache").mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="tqbench-disk-", dir=REPO / ".cache"))
    path = work / "model-00001-of-00001.safetensors"
    try:
        _write(path)
        res_written = (disk.page_cache_residency([path])["fraction"], _fincore(path))
        drop_own_file_from_page_cache(path)
        res_dropped = (disk.page_cache_residency([path])["fraction"], _fincore(path))
        ours, theirs = [], []
        for i in range(ROUNDS):
            if i % 2:
                theirs.append(_dd_rate(path))
            rate = disk.direct_read_rate([path], max_bytes=SIZE_MB << 20, max_seconds=60)
            if rate.get("gb_per_s") is None:
                print(f"bench disk: no O_DIRECT rate here ({rate.get('reason')})")
                return []
            ours.append(rate["gb_per_s"])
            if not i % 2:
                theirs.append(_dd_rate(path))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [
        Row(
            f"disk O_DIRECT read, {SIZE_MB} MB (median of {ROUNDS})",
            statistics.median(ours),
            statistics.median(theirs),
            "GB/s",
            "same rate",
            "dd iflag=direct bs=8M",
        ),
        Row("page cache resident after write", res_written[0], res_written[1], "", "same fraction", "fincore"),
        Row("page cache resident after DONTNEED", res_dropped[0], res_dropped[1], "", "same fraction", "fincore"),
    ]
