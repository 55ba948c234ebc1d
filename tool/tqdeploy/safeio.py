"""Reading files that tqdeploy did not write itself: state.json, logs, key files, configs, anything a path
from a spec, a state file or a process names.

Every such file is untrusted input. A read here opens without following a final symlink (O_NOFOLLOW),
refuses what is not a regular file before reading a byte (a FIFO would block, /dev/zero never ends, a
folder is not a file), checks that the path resolves inside the folder it must belong to, and is bounded
in size: the caller says how much it will read, and gets either the whole file, its tail, or a one-line
error naming the file and the fix. Opening with O_NONBLOCK means even a FIFO that slipped through the
type check cannot hang the open.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from tqdeploy.errors import TQError

KIB = 1024
MIB = 1024 * KIB
KEY_FILE_LIMIT = 4 * KIB  # an API key is tens of bytes; anything larger is not a key file


class FileRefused(TQError):
    """A file that is not what it must be: not regular, a symlink, outside its folder, too large."""


def is_within(path: Path, root: Path) -> bool:
    """True when ``path`` resolves (every symlink followed) to ``root`` or below it."""
    try:
        resolved = Path(os.path.realpath(path))
        top = Path(os.path.realpath(root))
    except (OSError, ValueError):
        return False
    return resolved == top or top in resolved.parents


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symlink"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: Path, label: str, within: Path | None = None, follow_symlinks: bool = False) -> int:
    """A descriptor of a regular file, or FileRefused naming ``label`` and the path."""
    path = Path(path)
    if within is not None and not is_within(path, within):
        raise FileRefused(
            f"{label} {path} lies outside {within}",
            f"tqdeploy reads it only inside {within}: move it there, or remove the link",
        )
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise FileRefused(f"{label} {path} does not exist", "check the path") from None
    except OSError as err:
        if not follow_symlinks and os.path.islink(path):
            raise FileRefused(
                f"{label} {path} is a symlink (to {os.readlink(path)}); not followed",
                "replace the link by the file itself",
            ) from None
        raise FileRefused(f"cannot open {label} {path}: {err.strerror}", "check its permissions") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise FileRefused(f"{label} {path} is {_kind(mode)}, not a regular file", "replace it by a regular file")
    return fd


def read_bytes(
    path: Path,
    limit: int,
    label: str = "file",
    within: Path | None = None,
    tail: bool = False,
    follow_symlinks: bool = False,
) -> bytes:
    """The file's bytes, at most ``limit`` of them.

    Larger than the limit: FileRefused, or with ``tail`` its last ``limit`` bytes (logs: the end is what
    matters). The size is read once from the descriptor, so a file that grows while it is read is cut at
    the limit, never read without end.
    """
    fd = open_regular(path, label, within, follow_symlinks)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            if not tail:
                raise FileRefused(
                    f"{label} {path} is {size} bytes, more than the {limit} tqdeploy reads",
                    "it is not the file tqdeploy expects there: check or remove it",
                )
            os.lseek(fd, size - limit, os.SEEK_SET)
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, MIB))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: Path, limit: int, label: str = "file", within: Path | None = None, tail: bool = False) -> str:
    return read_bytes(path, limit, label, within, tail).decode("utf-8", errors="replace")


@dataclass(frozen=True)
class KeyFileMode:
    path: Path
    mode: int

    @property
    def too_open(self) -> bool:
        """Readable or writable by group or others: anyone on the host can take the key."""
        return bool(self.mode & 0o077)

    def warning(self) -> str:
        return f"the API key file {self.path} has mode {self.mode:04o}: others on this host can read the key"

    def fix(self) -> str:
        return f"chmod 600 {self.path}"


def key_file_mode(path: Path) -> KeyFileMode:
    return KeyFileMode(Path(path), stat.S_IMODE(os.stat(path).st_mode))


def read_key_file(path: Path, within: Path | None = None) -> str:
    """The API key held in ``path``: a regular file of at most 4 KiB holding one line of printable ASCII without
    spaces; trailing newlines (CR or LF) are allowed. launch_vllm.py (templates/) applies this very rule when the
    server starts, so a key file `up` accepts is never refused at the start (a trailing space once was).

    The key is for requests only; callers never print it. A folder, FIFO, empty or binary file is refused
    with one line naming the file, before any server is asked.
    """
    raw = read_bytes(path, KEY_FILE_LIMIT, "the API key file", within, follow_symlinks=within is None)
    key = raw.rstrip(b"\r\n")
    if not key:
        raise FileRefused(f"the API key file {path} is empty", "put the server's API key in it (one line)")
    if any(c < 0x21 or c > 0x7E for c in key):
        raise FileRefused(
            f"the API key file {path} holds binary or control characters, a space or more than one line: not a key",
            "write the key as one line of printable ASCII, e.g. `openssl rand -hex 32 > FILE`",
        )
    return key.decode("ascii")
