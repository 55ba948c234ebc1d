"""What a mirror says a revision holds: its files with sizes and hashes (the data remote.py and fallback.py
both build, kept apart from either so neither imports the other)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RemoteFile:
    path: str
    size: int
    sha256: str | None  # LFS files only
    git_oid: str | None  # for LFS files the blob id of the pointer, not of the content
    lfs: bool


@dataclass(frozen=True)
class RepoListing:
    repo: str
    revision: str
    commit: str
    files: dict[str, RemoteFile]
    endpoint: str  # the mirror that answered
    unreachable: tuple[str, ...] = ()  # mirrors that could not be reached at all: skipped for the files
    hash_source: str = "revision API (?blobs=true)"  # where the sizes and hashes came from (download/fallback.py)
