"""Verification throughput of `tqdeploy download` next to coreutils `sha256sum` over the same files.

4 files x 64 MB of pseudo-random bytes in a temp dir, page cache warm for both (each tool runs
three times, alternating; the best run counts), so hashing speed is compared, not the disk.
sha256sum hashes its files one after another on one core; tqdeploy hashes files on threads (one
per core, hashlib releases the GIL), and the single-thread row shows the per-core speed too.
Goal: >= 80% of sha256sum.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench import Row
from tqdeploy.download.hashing import default_workers, digest_files

FILES = 4
FILE_MB = 64
ROUNDS = 3


def _make_files(folder: Path) -> list[Path]:
    paths = []
    for i in range(FILES):
        path = folder / f"shard-{i}.safetensors"
        block = hashlib.shake_256(f"bench-{i}".encode()).digest(1 << 20)
        with open(path, "wb") as fh:
            for _ in range(FILE_MB):
                fh.write(block)
        paths.append(path)
    return paths


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run() -> list[Row]:

    sha256sum = shutil.which("sha256sum")
    with tempfile.TemporaryDirectory(prefix="tqdeploy-bench-") as tmp:
        paths = _make_files(Path(tmp))
        total_mb = FILES * FILE_MB * (1 << 20) / 1e6
        ours, single, theirs = [], [], []
        for _ in range(ROUNDS):
            ours.append(_timed(lambda: digest_files(paths)))
            single.append(_timed(lambda: digest_files(paths, workers=1)))
            if sha256sum:
                theirs.append(
                    _timed(lambda: subprocess.run([sha256sum, *map(str, paths)], check=True, stdout=subprocess.DEVNULL))
                )
        # Same answers, or the speed means nothing.
        if sha256sum:
            out = subprocess.run([sha256sum, *map(str, paths)], check=True, capture_output=True, text=True).stdout
            expected = {Path(line.split()[1]): line.split()[0] for line in out.splitlines()}
            got = {p: d.sha256 for p, d in digest_files(paths).items()}
            if got != expected:
                raise RuntimeError("tqdeploy and sha256sum disagree on the bench files")
    theirs_mbs = total_mb / min(theirs) if theirs else None
    goal = ">= 0.80 x sha256sum"
    return [
        Row(
            f"download verify, {default_workers()} threads ({FILES}x{FILE_MB} MB)",
            total_mb / min(ours),
            theirs_mbs,
            "MB/s",
            goal,
            "sha256sum",
        ),
        Row(
            f"download verify, 1 thread ({FILES}x{FILE_MB} MB)",
            total_mb / min(single),
            theirs_mbs,
            "MB/s",
            goal,
            "sha256sum",
        ),
    ]


if __name__ == "__main__":  # `python -m bench.download`
    for row in run():
        ratio = f"{row.ratio:.2f}" if row.ratio is not None else "n/a"
        print(
            f"{row.name}: {row.ours:.0f} {row.unit} vs {row.theirs_name} {row.theirs or 0:.0f} {row.unit}"
            f" -> ratio {ratio} (goal {row.goal}); cores={os.cpu_count()}"
        )
