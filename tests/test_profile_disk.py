"""tqdeploy.profile.disk on real files: page-cache residency through mincore, the O_DIRECT read rate, bounds."""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path

import pytest

from tqdeploy.profile import disk
from tqdeploy.profile.diskread import drop_own_file_from_page_cache

MiB = 1 << 20


def _write(path: Path, nbytes: int) -> Path:
    with open(path, "wb") as fh:
        fh.write(os.urandom(nbytes))
        fh.flush()
        os.fsync(fh.fileno())
    return path


def _direct_ok(folder: Path) -> str | None:
    """None when `folder`'s filesystem takes O_DIRECT opens and is not in memory, else why not."""
    point, fs_type = disk.mount_of(folder)
    if fs_type in disk.MEMORY_FS:
        return f"{folder} is on {fs_type}"
    probe = folder / "odirect-probe"
    probe.write_bytes(b"\0" * 4096)
    try:
        os.close(os.open(probe, os.O_RDONLY | os.O_DIRECT))
    except OSError as exc:
        return f"{folder} ({fs_type} at {point}) refuses O_DIRECT: {exc.strerror}"
    finally:
        probe.unlink()
    return None


def test_weight_files_prefers_safetensors_sorted_and_follows_symlinks(tmp_path):
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    _write(blobs / "abc", 4096)
    model = tmp_path / "model"
    model.mkdir()
    (model / "model-00002-of-00002.safetensors").symlink_to(blobs / "abc")  # HF cache layout: links to blobs
    _write(model / "model-00001-of-00002.safetensors", 4096)
    _write(model / "pytorch_model.bin", 4096)
    (model / "config.json").write_text("{}")
    assert [p.name for p in disk.weight_files(model)] == [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ]
    (model / "broken.safetensors").symlink_to(tmp_path / "missing")
    assert len(disk.weight_files(model)) == 2  # a dangling link is no weight file


def test_weight_files_falls_back_to_bin_without_training_leftovers_and_is_bounded(tmp_path):
    for name in ("pytorch_model-00001.bin", "pytorch_model-00002.bin", "training_args.bin", "optimizer.bin"):
        _write(tmp_path / name, 16)
    assert [p.name for p in disk.weight_files(tmp_path)] == ["pytorch_model-00001.bin", "pytorch_model-00002.bin"]
    assert len(disk.weight_files(tmp_path, max_files=1)) == 1
    assert disk.weight_files(tmp_path / "absent") == []


def test_residency_sees_a_fresh_file_and_its_eviction(tmp_path):
    weights = _write(tmp_path / "model.safetensors", 32 * MiB)
    empty = tmp_path / "empty.safetensors"
    empty.touch()
    warm = disk.page_cache_residency([weights, empty])
    assert warm["bytes"] == 32 * MiB and warm["bytes_checked"] == 32 * MiB
    assert warm["fraction"] > 0.9, warm  # just written and fsync'd: its clean pages stay cached
    assert not warm["partial"] and warm["error"] is None
    drop_own_file_from_page_cache(weights)
    cold = disk.page_cache_residency([weights])
    assert cold["fraction"] < 0.1, cold
    # the measurement itself reads nothing: asking again still finds the file cold
    assert disk.page_cache_residency([weights])["fraction"] == cold["fraction"]


def test_residency_of_a_sparse_20_gib_file_stays_in_budget(tmp_path):
    sparse = tmp_path / "huge.safetensors"
    with open(sparse, "wb") as fh:
        fh.truncate(20 << 30)  # no data blocks: reading it would take minutes, mincore takes milliseconds
    t0 = time.monotonic()
    out = disk.page_cache_residency([sparse], time_budget_s=5.0)
    assert time.monotonic() - t0 < 6.0
    assert out["bytes"] == 20 << 30 and out["fraction"] is not None and out["fraction"] < 0.01
    tight = disk.page_cache_residency([sparse], time_budget_s=0.0)  # budget gone after the first check
    assert tight["partial"] and tight["bytes_checked"] < 20 << 30
    capped = disk.page_cache_residency([sparse, sparse], max_files=1)
    assert capped["partial"] and capped["bytes_checked"] == 20 << 30


def test_direct_read_measures_the_disk_and_leaves_the_cache_alone(tmp_path):
    why = _direct_ok(tmp_path)
    if why is not None:
        pytest.skip(why)  # the refusal path is asserted in test_direct_read_on_a_memory_filesystem_gives_a_reason
    small = _write(tmp_path / "model-00002.safetensors", 8 * MiB)
    big = _write(tmp_path / "model-00001.safetensors", 48 * MiB)
    drop_own_file_from_page_cache(big)
    out = disk.direct_read_rate([small, big], max_bytes=24 * MiB, max_seconds=10.0)
    assert out["method"] == "O_DIRECT" and out["fs_type"] and out["mount_point"]
    assert out["files"] == [str(big)]  # the largest file first
    assert "small sample" in out["sample_note"]  # 24 MiB: latency still weighs on the rate
    assert out["bytes"] == 24 * MiB  # 8 MiB blocks up to the byte cap
    assert out["gb_per_s"] == pytest.approx(out["bytes"] / 1e9 / out["seconds"], rel=0.05)  # decimal GB/s
    assert disk.page_cache_residency([big])["fraction"] < 0.1  # O_DIRECT filled no page cache
    whole = disk.direct_read_rate([small, big], max_bytes=1 << 40, max_seconds=10.0)
    assert whole["bytes"] == 56 * MiB and whole["files"] == [str(big), str(small)]


def test_direct_read_stops_at_its_time_limit(tmp_path):
    if (why := _direct_ok(tmp_path)) is not None:
        pytest.skip(why)
    big = _write(tmp_path / "model.safetensors", 64 * MiB)
    out = disk.direct_read_rate([big], max_seconds=0.0)
    assert out["bytes"] == 0 and out["gb_per_s"] is None and "nothing read" in out["reason"]


def test_direct_read_on_a_memory_filesystem_gives_a_reason(tmp_path):
    shm = Path("/dev/shm")
    if disk.mount_of(shm)[1] != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm on this host")
    path = shm / f"tqdeploy-disk-test-{os.getpid()}.safetensors"
    try:
        _write(path, MiB)
        out = disk.direct_read_rate([path])
    finally:
        path.unlink(missing_ok=True)
    assert out["gb_per_s"] is None and out["fs_type"] == "tmpfs"
    assert "memory reads" in out["reason"]


def test_direct_read_never_times_holes(tmp_path):
    sparse = tmp_path / "huge.safetensors"
    with open(sparse, "wb") as fh:
        fh.truncate(4 << 30)
    out = disk.direct_read_rate([sparse])
    assert out["gb_per_s"] is None and "sparse" in out["reason"]
    assert disk.direct_read_rate([])["reason"] == "no weight data"


def test_mount_of_finds_the_longest_prefix(tmp_path):
    assert disk.mount_of("/proc/self")[1] == "proc"
    point, fs_type = disk.mount_of(tmp_path)
    assert point is not None and fs_type and str(tmp_path.resolve()).startswith(point)


def test_measure_runs_standalone_on_a_model_folder(tmp_path):
    """The form the lead runs on a bare GPU host: stdlib only, `python3 -m tqdeploy.profile.disk DIR`."""
    import json
    import subprocess
    import sys

    _write(tmp_path / "model.safetensors", 4 * MiB)
    tool = Path(disk.__file__).resolve().parents[2]
    env = {"PATH": os.environ.get("PATH", "/usr/bin"), "PYTHONPATH": str(tool)}
    code = "import sys, runpy; runpy.run_module('tqdeploy.profile.disk', run_name='__main__'); " + (
        "assert not [m for m in sys.modules if m.split('.')[0] in ('rich', 'typer', 'psutil', 'numpy')]"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["residency"]["bytes"] == 4 * MiB and out["residency"]["fraction"] > 0.9
    assert out["direct_read"]["gb_per_s"] or out["direct_read"]["reason"]


def test_mincore_probe_trusts_this_linux_kernel_and_refuses_a_pretending_one(tmp_path, monkeypatch):
    """gVisor's mincore writes 1 for every mapped page (pkg/sentry/syscalls/linux/sys_mmap.go): residency
    must then say it cannot measure rather than report 100%. The libc adapter is the one thing replaced."""
    assert disk.mincore_sees_page_cache()  # a real Linux kernel: an untouched anonymous map is not resident
    real = disk._libc()

    class PretendingLibc:
        mmap, munmap = real.mmap, real.munmap

        @staticmethod
        def mincore(addr, length, vec):
            ctypes.memset(vec, 1, (length + disk._PAGE - 1) // disk._PAGE)
            return 0

    monkeypatch.setattr(disk, "_libc", PretendingLibc)
    weights = _write(tmp_path / "model.safetensors", MiB)
    out = disk.page_cache_residency([weights])
    assert out["fraction"] is None and "cannot measure" in out["error"] and out["bytes"] == MiB
