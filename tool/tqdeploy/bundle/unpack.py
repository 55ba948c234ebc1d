"""Every member of an archive, nested archives opened too (tar, tar.gz, zip, gz inside the bundle), with
bounds: a member count, a total of decompressed bytes and a nesting depth, so a crafted archive (a gzip
bomb, ten thousand members) ends in a one-line problem, not in an exhausted machine."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

MAX_MEMBERS = 20000
MAX_TOTAL_BYTES = 512 * 1024 * 1024
MAX_DEPTH = 4


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class TooLarge(Exception):
    pass


@dataclass
class Budget:
    members: int = 0
    total: int = 0

    def take(self, size: int) -> None:
        self.members += 1
        self.total += size
        if self.members > MAX_MEMBERS:
            raise TooLarge(f"more than {MAX_MEMBERS} members")
        if self.total > MAX_TOTAL_BYTES:
            raise TooLarge(f"more than {MAX_TOTAL_BYTES} bytes decompressed")


def kind_of(data: bytes) -> str | None:
    if data[:2] == b"\x1f\x8b":
        return "gz"
    if data[:4] == b"PK\x03\x04":
        return "zip"
    if len(data) >= 262 and data[257:262] == b"ustar":
        return "tar"
    return None


def _read_limited(fh: Readable, budget: Budget) -> bytes:
    left = MAX_TOTAL_BYTES - budget.total
    data = fh.read(left + 1)
    budget.take(len(data))
    return data


def _tar_members(data: bytes, budget: Budget) -> Iterator[tuple[str, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        for member in tar:
            if member.isfile():
                fh = tar.extractfile(member)
                yield member.name, _read_limited(fh, budget) if fh else b""


def _zip_members(data: bytes, budget: Budget) -> Iterator[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            if not info.is_dir():
                with zf.open(info) as fh:
                    yield info.filename, _read_limited(fh, budget)


def members(data: bytes, budget: Budget) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of one archive level (a gz of a tar is a tar; a gz of a file is that file)."""
    kind = kind_of(data)
    if kind == "gz":
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
            inner = _read_limited(gz, budget)
        if kind_of(inner) == "tar":
            yield from _tar_members(inner, budget)
        else:
            yield "(gunzipped)", inner
    elif kind == "zip":
        yield from _zip_members(data, budget)
    elif kind == "tar":
        yield from _tar_members(data, budget)


def walk(name: str, data: bytes, budget: Budget, depth: int = 0) -> Iterator[tuple[str, bytes]]:
    """Leaf members of data (named outer!inner for nested ones); data itself when it is no archive."""
    if kind_of(data) is None or depth > MAX_DEPTH:
        yield name, data
        return
    try:
        inner = list(members(data, budget))
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError):
        yield name, data
        return
    for child, content in inner:
        yield from walk(f"{name}!{child}", content, budget, depth + 1)
