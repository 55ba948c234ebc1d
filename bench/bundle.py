"""Benchmark: `tqdeploy bundle` of a typical deployment against collecting the same files by hand with tar.

The deployment is the tiny CPU demo (`tqdeploy build --embedded tiny-cpu-demo`) with a stamped server log
of about 1 MiB in the shape vLLM 0.32 prints (tests/fixtures/vllm-logs/cpu-vllm-0.32.0). `sos report` is not
installable on these machines, so the other side is `tar czf` of the build dir (spec, lock, rendered files,
log) plus a `tqdeploy doctor --snapshot-out` snapshot: the same files, no redaction, no manifest.
Goals: a typical bundle in <= 3 s and <= 2 MB. Large logs (issue 19): 30 logs of 3 MB each, and one 100 MB
log, bundled in <= 5 s each (the bundle reads the newest 2 MiB of each log, 8 MiB in all, so the redaction
time is bounded whatever lies on disk; before, 30 logs of 3 MB took 62-72 s).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench import Row
from bench.doctor import measure, tqdeploy_argv

RUNS = int(os.environ.get("TQDEPLOY_BENCH_RUNS", "5"))
LOG_LINE = (
    "(APIServer pid=7152) INFO 12-01 08:05:{s:02d} [loggers.py:259] Engine 000: Avg prompt throughput: 12.3 "
    "tokens/s, Avg generation throughput: 45.6 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: "
    "0.4%, Prefix cache hit rate: 0.0%, client 10.0.{a}.{b}"
)


def make_deployment(root: Path) -> Path:
    build = root / "build"
    subprocess.run(
        tqdeploy_argv() + ["build", "--embedded", "tiny-cpu-demo", "--out", str(build)],
        check=True,
        capture_output=True,
    )
    logs = build / ".tqdeploy" / "logs"
    logs.mkdir(parents=True)
    start = time.time() - 3600
    lines = [f"{start + i:.3f}|" + LOG_LINE.format(s=i % 60, a=i % 7, b=i % 250) for i in range(4500)]
    (logs / "server.log").write_text("\n".join(lines) + "\n")
    return build


def write_logs(logs: Path, count: int, size: int) -> None:
    """count stamped logs of about size bytes each, in the shape of the bench's 1 MiB log."""
    start = time.time() - 86400
    block_lines = [LOG_LINE.format(s=i % 60, a=i % 7, b=i % 250) for i in range(2000)]
    for n in range(count):
        with open(logs / f"server-{n:02d}.log", "w", encoding="utf-8") as fh:
            written, i = 0, 0
            while written < size:
                chunk = "".join(
                    f"{start + n * 3600 + (i + k) * 0.01:.3f}|{line}\n" for k, line in enumerate(block_lines)
                )
                fh.write(chunk)
                written += len(chunk)
                i += len(block_lines)


def large_logs_rows(root: Path) -> list[Row]:
    """The two large-log cases, each a fresh build dir; `tar czf` of the same dir is the other side."""
    mb = 1000 * 1000
    rows = []
    for label, count, size in (("30 logs of 3 MB", 30, 3 * mb), ("one 100 MB log", 1, 100 * mb)):
        case = root / label.replace(" ", "-")
        case.mkdir()
        build = make_deployment(case)
        write_logs(build / ".tqdeploy" / "logs", count, size)
        out = case / "bundle.tar.gz"
        argv = tqdeploy_argv() + ["bundle", str(build), "--out", str(out), "--force"]
        walls = [measure(argv)[0] for _ in range(max(3, RUNS // 2))]
        t0 = time.perf_counter()
        subprocess.run(["tar", "czf", str(case / "byhand.tar.gz"), "-C", str(case), "build"], check=True)
        tar_wall = time.perf_counter() - t0
        rows.append(Row(f"bundle wall, {label} (median)", statistics.median(walls), tar_wall, "s", "<= 5 s", "tar czf"))
    return rows


def run() -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="tqdeploy-bench-bundle-") as tmp:
        root = Path(tmp)
        build = make_deployment(root)
        out = root / "bundle.tar.gz"
        walls = [
            measure(tqdeploy_argv() + ["bundle", str(build), "--out", str(out), "--force"])[0] for _ in range(RUNS)
        ]
        size = out.stat().st_size
        tar_walls = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            subprocess.run(
                tqdeploy_argv() + ["doctor", "--offline", "--snapshot-out", str(build / "snapshot.json")],
                capture_output=True,
            )
            subprocess.run(["tar", "czf", str(root / "byhand.tar.gz"), "-C", str(root), "build"], check=True)
            tar_walls.append(time.perf_counter() - t0)
        tar_size = (root / "byhand.tar.gz").stat().st_size
        large = large_logs_rows(root)
    theirs = "doctor --snapshot-out + tar czf by hand (no redaction)"
    mb = 1024 * 1024
    return [
        Row(
            f"bundle wall (median of {RUNS})",
            statistics.median(walls),
            statistics.median(tar_walls),
            "s",
            "<= 3 s",
            theirs,
        ),
        Row("bundle size", size / mb, tar_size / mb, "MB", "<= 2 MB", theirs),
        *large,
    ]
