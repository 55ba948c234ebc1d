"""A mirror's revision listing, read with bounds and checked before anything is taken from it.

huggingface_hub's HfApi.model_info reads the whole answer with no size limit and only a per-read timeout: an
endless JSON answer was read until memory ran out, and one sent a byte every 2 s was still being read after
60 s. Here the same request (GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true, as hf_api.py's
model_info sends it with files_metadata=True, through huggingface_hub's own session and headers) is read to
at most LISTING_LIMIT bytes, within LISTING_DEADLINE_S, and at the minimum rate the transfers keep
(RetryPolicy.min_bytes_per_s over rate_window_s). HTTP errors still go through hf_raise_for_status, so a
missing revision or a gated repository is reported as before.

What the answer says is then checked (check_listing) for what tqdeploy writes to disk and prints: the commit
is 40 hex characters (it goes into the manifest and the lock), every path a relative path without control
characters (it becomes a file name in the model folder and a line on the terminal), every size an integer,
every hash 64 or 40 hex characters. A listing that fails is this mirror's failure, said in one line.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import quote

from tqdeploy.adaptors import hfhub
from tqdeploy.adaptors.httplib import session_http_lib
from tqdeploy.download.listing import RemoteFile
from tqdeploy.download.selection import is_unsafe_path
from tqdeploy.download.transfer import HTTPResponse, RetryPolicy
from tqdeploy.errors import TQError, shown
from tqdeploy.jsonin import loads

LISTING_LIMIT = 64 << 20  # the listing of a repository of 10,000 files with blobs is a few MiB
LISTING_DEADLINE_S = 120.0  # one listing answer, whole; the Hub answers in well under a second
MAX_PAGES = 1000  # pages of a tree listing (the Hub sends 1,000 entries a page)
PATH_LIMIT = 1000  # characters of one repository path
SIZE_LIMIT = 2**63 - 1
_SHA1 = re.compile(r"^[0-9a-f]{40}\Z")
_SHA256 = re.compile(r"^[0-9a-f]{64}\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
Token = str | bool | None  # huggingface_hub's: a token, False to send none, None for its own choice


@dataclass(frozen=True)
class ListedSibling:
    """One file of a revision answer: its name checked to be a string, the rest as the mirror sent it
    (remote_file checks them before anything is taken from them)."""

    rfilename: str
    size: Any
    blob_id: Any
    lfs: dict[str, Any] | None


@dataclass(frozen=True)
class RevisionAnswer:
    """A revision answer's commit and files (``siblings`` None: the mirror sent no list)."""

    sha: str | None
    siblings: list[ListedSibling] | None


class MirrorQuery(NamedTuple):
    """What one mirror is asked with, as remote.list_repo holds it for the fallback listing."""

    policy: RetryPolicy
    endpoint: str
    repo: str
    revision: str
    token: Token
    timeout_s: float


class ListingRefused(Exception):
    """This mirror's listing is too large, too slow, or not a listing tqdeploy can take."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _read(resp: HTTPResponse, deadline: float, policy: RetryPolicy, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    window_start, window_bytes = time.monotonic(), 0
    for chunk in resp.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        window_bytes += len(chunk)
        if size > limit:
            raise ListingRefused(f"its listing is larger than {LISTING_LIMIT} bytes")
        now = time.monotonic()
        if now > deadline:
            raise ListingRefused(f"its listing did not arrive within {LISTING_DEADLINE_S:g} s")
        if now - window_start >= policy.rate_window_s:
            if window_bytes < policy.min_bytes_per_s * (now - window_start):
                rate = window_bytes / (now - window_start)
                raise ListingRefused(f"it sends its listing at {rate:.0f} B/s, under {policy.min_bytes_per_s:.0f} B/s")
            window_start, window_bytes = now, 0
    return b"".join(chunks)


def _get(
    url: str,
    params: dict[str, str] | None,
    token: Token,
    timeout_s: float,
    policy: RetryPolicy,
    deadline: float,
    limit: int,
) -> tuple[bytes, str | None]:
    """(body, next page URL or None) of one GET, read within ``deadline`` and ``limit`` bytes; an HTTP error is
    raised as huggingface_hub raises it (RevisionNotFoundError, GatedRepoError...)."""
    http_lib = session_http_lib()
    left = deadline - time.monotonic()
    if left <= 0:
        raise ListingRefused(f"its listing did not arrive within {LISTING_DEADLINE_S:g} s")
    timeout = http_lib.Timeout(timeout_s, read=min(timeout_s, left))
    headers = hfhub.build_hf_headers(token=token)
    with hfhub.get_session().stream("GET", url, params=params, headers=headers, timeout=timeout) as resp:
        body = _read(resp, deadline, policy, limit)
        if resp.status_code >= 300:  # errors mapped as huggingface_hub maps them (RevisionNotFoundError...)
            hfhub.hf_raise_for_status(
                http_lib.Response(resp.status_code, headers=resp.headers, content=body[:65536], request=resp.request)
            )
        next_url = resp.links.get("next", {}).get("url")
        return body, next_url if isinstance(next_url, str) else None


def _deadline(policy: RetryPolicy) -> float:
    left = policy.left_s()
    return time.monotonic() + (LISTING_DEADLINE_S if left is None else max(0.5, min(LISTING_DEADLINE_S, left)))


def _json(body: bytes) -> Any:
    try:
        return loads(body, "its listing", "")
    except TQError as err:
        raise ListingRefused(err.message) from None


def get_revision(
    endpoint: str, repo: str, revision: str, token: Token, timeout_s: float, policy: RetryPolicy
) -> RevisionAnswer:
    """The revision answer as ``sha`` and ``siblings`` (rfilename, size, blob_id, lfs), types checked."""
    url = f"{endpoint.rstrip('/')}/api/models/{repo}/revision/{quote(revision, safe='')}"
    body, _ = _get(url, {"blobs": "true"}, token, timeout_s, policy, _deadline(policy), LISTING_LIMIT)
    return _info(_json(body))


def get_tree(
    endpoint: str, repo: str, revision: str, token: Token, timeout_s: float, policy: RetryPolicy
) -> list[dict[str, Any]]:
    """The recursive tree listing (GET .../tree/{rev}?recursive=true, pages followed by their Link header as
    huggingface_hub's list_repo_tree follows them), every page within one deadline and one byte budget."""
    url: str | None = f"{endpoint.rstrip('/')}/api/models/{repo}/tree/{quote(revision, safe='')}"
    params: dict[str, str] | None = {"recursive": "true", "expand": "false"}
    deadline, left = _deadline(policy), LISTING_LIMIT
    entries: list[dict[str, Any]] = []
    for _ in range(MAX_PAGES):
        if url is None:
            return entries
        body, url = _get(url, params, token, timeout_s, policy, deadline, left)
        left -= len(body)
        page = _json(body)
        if not isinstance(page, list) or not all(isinstance(e, dict) for e in page):
            raise ListingRefused("its tree listing is not a list of objects")
        entries.extend(page)
        params = None  # the next page's URL carries them
    raise ListingRefused(f"its tree listing has more than {MAX_PAGES} pages")


def _info(data: Any) -> RevisionAnswer:
    if not isinstance(data, dict):
        raise ListingRefused("its listing is not a JSON object")
    sha, siblings = data.get("sha"), data.get("siblings")
    if sha is not None and not isinstance(sha, str):
        raise ListingRefused(f"its commit {str(sha)[:60]!r} is not a string")
    if siblings is not None and not isinstance(siblings, list):
        raise ListingRefused("its 'siblings' is not a list")
    out = []
    for i, s in enumerate(siblings or []):
        if not isinstance(s, dict) or not isinstance(s.get("rfilename"), str):
            raise ListingRefused(f"siblings[{i}] has no file name (rfilename)")
        lfs = s.get("lfs")
        if lfs is not None and not isinstance(lfs, dict):
            raise ListingRefused(f"siblings[{i}].lfs is not an object")
        out.append(ListedSibling(rfilename=s["rfilename"], size=s.get("size"), blob_id=s.get("blobId"), lfs=lfs))
    return RevisionAnswer(sha=sha, siblings=None if siblings is None else out)


def _size(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SIZE_LIMIT:
        raise ListingRefused(f"{where}: size {str(value)[:40]!r} is not a byte count")
    return value


def remote_file(path: Any, size: Any, sha256: Any, git_oid: Any, lfs: bool) -> RemoteFile:
    """One listed file, checked: a safe relative path without control characters, an integer size, hashes
    of 64 (sha256) and 40 (git blob id) lowercase hex characters."""
    if not isinstance(path, str) or not path or len(path) > PATH_LIMIT:
        raise ListingRefused(f"a file name {shown(path, 80)} is not a repository path")
    if _CONTROL.search(path):
        raise ListingRefused(f"the file name {shown(path, 120)} holds a control character (newline, NUL, escape...)")
    if is_unsafe_path(path):
        raise ListingRefused(f"the file name {shown(path, 120)} leaves the model folder")
    where = shown(path, 120)
    if lfs and not (isinstance(sha256, str) and _SHA256.match(sha256)):
        raise ListingRefused(f"{where}: LFS sha256 {shown(sha256, 80)} is not 64 hex characters")
    if git_oid is not None and not (isinstance(git_oid, str) and _SHA1.match(git_oid)):
        raise ListingRefused(f"{where}: blob id {shown(git_oid, 80)} is not 40 hex characters")
    return RemoteFile(path=path, size=_size(size, where), sha256=sha256 if lfs else None, git_oid=git_oid, lfs=lfs)


def check_commit(commit: Any) -> str:
    if not (isinstance(commit, str) and _SHA1.match(commit)):
        raise ListingRefused(f"its commit {shown(commit, 80)} is not 40 hex characters")
    return commit
