"""The listing of a mirror whose revision API ignores ?blobs=true, read the way huggingface_hub reads it.

Some mirrors answer /api/models/{repo}/revision/{rev} with siblings that carry names only. huggingface_hub's
snapshot_download does not need more from that call: it takes the commit from it (or from HEAD on a resolve
URL, X-Repo-Commit) and the files from /api/models/{repo}/tree/{commit}?recursive=true (HfApi.list_repo_tree:
size, git blob id, and for LFS files lfs.oid = sha256), and each file's size and hash from HEAD on its resolve
URL (file_download.get_hf_file_metadata: X-Linked-Size / X-Linked-Etag for LFS files, Content-Length / ETag
otherwise). The same order here; every file still gets a hash to verify (LFS sha256, or the git blob sha1 of
a small file), and the listing says which source the hashes came from.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tqdeploy.adaptors import hfhub
from tqdeploy.download.listing import RemoteFile
from tqdeploy.download.listing_http import MirrorQuery, RevisionAnswer, Token, get_tree, remote_file
from tqdeploy.download.transfer import RetryPolicy

TREE = "tree API (/api/models/{repo}/tree/{commit})"
HEADERS = "HEAD on resolve URLs (X-Linked-Etag / ETag, X-Linked-Size)"
_SHA256 = re.compile(r"^[0-9a-f]{64}\Z")
_SHA1 = re.compile(r"^[0-9a-f]{40}\Z")


class Unverifiable(Exception):
    """Neither source gives a commit, a size and a hash for every file."""


def listing_without_blobs(
    ctx: MirrorQuery, info: RevisionAnswer, on_event: Callable[[str], None]
) -> tuple[str, dict[str, RemoteFile], str]:
    """(commit, files, hash source) for a revision answer that lacks sizes or hashes; Unverifiable if none."""
    policy, endpoint, repo, revision, token, timeout_s = ctx
    names = [s.rfilename for s in (info.siblings or [])]
    commit = info.sha if isinstance(info.sha, str) and _SHA1.match(info.sha) else None
    try:
        files = _from_tree(endpoint, repo, commit or revision, token, timeout_s, policy)
        source = TREE
    except Unverifiable as why:
        on_event(f"tree API: {why}; asking HEAD on each file")
        files, head_commit = _from_heads(endpoint, repo, commit or revision, names, token, timeout_s)
        commit, source = commit or head_commit, HEADERS
    if commit is None:
        _, commit = _from_heads(endpoint, repo, revision, names[:1] or ["config.json"], token, timeout_s)
    if commit is None or not files:
        raise Unverifiable("no commit or no files")
    return commit, files, source


def _from_tree(
    endpoint: str, repo: str, revision: str, token: Token, timeout_s: float, policy: RetryPolicy
) -> dict[str, RemoteFile]:
    try:
        entries = get_tree(endpoint, repo, revision, token, timeout_s, policy)  # bounded in bytes and time
    except Exception as err:  # any transport, HTTP or size error: this source is not available
        raise Unverifiable(f"unavailable ({type(err).__name__})") from None
    files: dict[str, RemoteFile] = {}
    for e in entries:
        if e.get("type") != "file":  # a folder
            continue
        lfs = e.get("lfs")
        lfs = lfs if isinstance(lfs, dict) else None
        sha256 = lfs.get("oid") if lfs is not None else None  # the tree API's lfs.oid is the content's sha256
        size = lfs.get("size") if lfs is not None else e.get("size")
        if not isinstance(size, int) or (lfs is not None and not (isinstance(sha256, str) and _SHA256.match(sha256))):
            raise Unverifiable(f"{str(e.get('path'))[:120]!r} has no size or LFS sha256")
        oid = e.get("oid")
        if lfs is None and not (isinstance(oid, str) and _SHA1.match(oid)):
            raise Unverifiable(f"{str(e.get('path'))[:120]!r} has no git blob id")
        checked = remote_file(e.get("path"), size, sha256, oid, lfs is not None)  # path and hashes checked
        files[checked.path] = checked
    return files


def _from_heads(
    endpoint: str, repo: str, revision: str, names: list[str], token: Token, timeout_s: float
) -> tuple[dict[str, RemoteFile], str | None]:
    files: dict[str, RemoteFile] = {}
    commit: str | None = None
    for name in names:
        url = hfhub.hf_hub_url(repo, name, revision=revision, endpoint=endpoint)
        try:
            meta = hfhub.get_hf_file_metadata(url, token=token, timeout=timeout_s)
        except Exception as err:
            raise Unverifiable(f"HEAD {name}: {type(err).__name__}") from None
        etag = (meta.etag or "").strip('"').removeprefix("W/").strip('"')
        commit = commit or meta.commit_hash
        if not isinstance(meta.size, int):
            raise Unverifiable(f"HEAD {name}: no size")
        if _SHA256.match(etag):
            files[name] = remote_file(name, meta.size, etag, None, True)
        elif _SHA1.match(etag):
            files[name] = remote_file(name, meta.size, None, etag, False)
        else:
            raise Unverifiable(f"HEAD {name}: its ETag is neither a sha256 nor a git blob id")
    return files, commit
