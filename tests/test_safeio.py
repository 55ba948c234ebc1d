"""safeio: bounded reads of untrusted files, on real files, links, FIFOs and devices."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tqdeploy.safeio import FileRefused, is_within, key_file_mode, read_bytes, read_key_file, read_text


def test_reads_a_regular_file_whole(tmp_path: Path) -> None:
    f = tmp_path / "state.json"
    f.write_text('{"a": 1}')
    assert read_text(f, 100, "state file", within=tmp_path) == '{"a": 1}'


def test_a_file_over_the_limit_is_refused_or_tailed(tmp_path: Path) -> None:
    f = tmp_path / "server.log"
    f.write_bytes(b"x" * 90 + b"last line\n")
    with pytest.raises(FileRefused, match="100 bytes, more than the 50"):
        read_bytes(f, 50, "log")
    assert read_bytes(f, 10, "log", tail=True) == b"last line\n"


def test_a_symlink_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "outside"
    secret.write_text("root:x:0:0")
    link = tmp_path / "server.log"
    link.symlink_to(secret)
    with pytest.raises(FileRefused, match="is a symlink .*not followed"):
        read_bytes(link, 100, "log")


def test_a_path_outside_its_folder_is_refused(tmp_path: Path) -> None:
    build, other = tmp_path / "build", tmp_path / "other"
    build.mkdir()
    other.mkdir()
    (other / "logs").write_text("x")
    (build / "logs").symlink_to(other, target_is_directory=True)
    assert not is_within(build / "logs" / "logs", build)
    with pytest.raises(FileRefused, match="lies outside"):
        read_bytes(build / "logs" / "logs", 100, "log", within=build)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "state.json"
    os.mkfifo(fifo)
    done: list[str] = []

    def read() -> None:
        try:
            read_bytes(fifo, 100, "state file")
        except FileRefused as err:
            done.append(err.message)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(5)
    assert done and "is a FIFO, not a regular file" in done[0]


@pytest.mark.parametrize("path, kind", [("/dev/zero", "a character device"), ("/", "a folder")])
def test_devices_and_folders_are_refused(path: str, kind: str) -> None:
    with pytest.raises(FileRefused, match=kind):
        read_bytes(Path(path), 100, "file", follow_symlinks=True)


def test_key_file_rules(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("sk-local-123\n")
    key.chmod(0o644)
    assert read_key_file(key) == "sk-local-123"
    assert key_file_mode(key).too_open and "chmod 600" in key_file_mode(key).fix()
    key.chmod(0o600)
    assert not key_file_mode(key).too_open
    key.write_bytes(b"")
    with pytest.raises(FileRefused, match="is empty"):
        read_key_file(key)
    key.write_bytes(b"\x00\xff\x10abc")
    with pytest.raises(FileRefused, match="binary or control"):
        read_key_file(key)
    with pytest.raises(FileRefused, match="a folder"):
        read_key_file(tmp_path)
    key.write_bytes(b"k" * 5000)
    with pytest.raises(FileRefused, match="more than the 4096"):
        read_key_file(key)
