"""Digests agree with the tools operators trust: sha256sum and git hash-object."""
import shutil
import subprocess

import pytest

from tqdeploy.download.hashing import CHUNK, digest_file, digest_files


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 7, 3 * CHUNK + 5])
def test_digest_matches_sha256sum_and_git(tmp_path, size):
    path = tmp_path / f"f{size}"
    path.write_bytes(bytes((i * 7 + 3) % 251 for i in range(size)))
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
