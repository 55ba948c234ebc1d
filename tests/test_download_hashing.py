"""Digests agree with the tools operators trust: sha256sum and git hash-object."""

import hashlib
import shutil
import subprocess

import pytest

from tqdeploy.download.hashing import CHUNK, digest_file, digest_files


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 7, 3 * CHUNK + 5])
def test_digest_matches_sha256sum_and_git(tmp_path, size):
    path = tmp_path / f"f{size}"
    path.write_bytes(hashlib.shake_256(b"tqdeploy").digest(size))
    d = digest_file(path)
    assert d.size == size
    assert d.sha256 == subprocess.run(["sha256sum", path], capture_output=True, text=True, check=True).stdout.split()[0]
    if shutil.which("git"):
        oid = subprocess.run(["git", "hash-object", path], capture_output=True, text=True, check=True).stdout.strip()
        assert d.git_oid == oid


def test_parallel_digests_equal_serial_and_count_every_byte(tmp_path):
    paths = []
    for i in range(5):
        p = tmp_path / f"f{i}"
        p.write_bytes(bytes([i]) * (CHUNK + i * 1000))
        paths.append(p)
    seen = []
    parallel = digest_files(paths, workers=3, on_bytes=seen.append)
    assert {p: digest_file(p, with_git_oid=False).sha256 for p in paths} == {p: d.sha256 for p, d in parallel.items()}
    assert sum(seen) == sum(p.stat().st_size for p in paths)


def test_ctrl_c_stops_every_hashing_thread_at_its_next_read(tmp_path):
    import os
    import signal
    import threading

    paths = []
    for i in range(4):
        p = tmp_path / f"big{i}"
        p.write_bytes(bytes([i]) * (8 * CHUNK))
        paths.append(p)
    total = sum(p.stat().st_size for p in paths)
    read: list[int] = []
    main = threading.main_thread().ident

    def on_bytes(n: int) -> None:
        read.append(n)
        if len(read) == 1:  # as a person pressing Ctrl-C while the files are hashed
            signal.pthread_kill(main, signal.SIGINT)

    # Python's own SIGINT handler, even when the suite runs with SIGINT ignored (`nohup make test &`).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            digest_files(paths, workers=2, on_bytes=on_bytes)
    finally:
        signal.signal(signal.SIGINT, previous)
    done = sum(read)
    assert done < total / 4, (done, total)  # each thread stopped after a chunk or two, not at the end
    assert os.path.exists(paths[0])


def test_an_unreadable_file_is_named_not_a_traceback(tmp_path):
    from tqdeploy.errors import TQError

    folder = tmp_path / "not-a-file"
    folder.mkdir()
    with pytest.raises(TQError, match="cannot read .*not-a-file"):
        digest_files([folder])
