"""The repository as a mirror describes it: commit, files, sizes, LFS sha256 and blob ids.

One call per mirror, retried on 408/429/5xx like a file (transfer.RetryPolicy): the request
HfApi(endpoint=...).model_info(repo, revision=..., files_metadata=True) sends,
GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true (huggingface_hub hf_api.py), read with bounds
in bytes and time and checked before use (listing_http.py). Mirrors
are asked in order; one that is down or errors is reported and the next is asked. A mirror that
answers "no such revision / repository" is believed only when every mirror agrees.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from tqdeploy.adaptors import hfhub
from tqdeploy.adaptors.httplib import session_http_lib
from tqdeploy.download.fallback import Unverifiable, listing_without_blobs
from tqdeploy.download.listing import RemoteFile, RepoListing
from tqdeploy.download.listing_http import (
    ListedSibling,
    ListingRefused,
    MirrorQuery,
    RevisionAnswer,
    check_commit,
    get_revision,
    remote_file,
)
from tqdeploy.download.transfer import RETRY_STATUSES, RetryPolicy, retry_after_s
from tqdeploy.errors import EXIT_FINDINGS, TQError
from tqdeploy.net.urls import check_endpoint, redact_hub_logs, shown_url

Answer = TypeVar("Answer")


def public_endpoint(url: str) -> str:
    """The mirror URL without any user:password part or query, for messages and the manifest."""
    return shown_url(url)


def normalize_endpoint(url: str) -> str:
    return check_endpoint(url)


def list_repo(
    endpoints: list[str],
    repo: str,
    revision: str,
    token: str | bool | None,
    on_event: Callable[[str], None],
    timeout_s: float = 20.0,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> RepoListing:
    """Ask each mirror in order; 408/429/5xx are retried per ``policy`` before moving on."""
    redact_hub_logs()
    policy = policy or RetryPolicy()
    not_found: list[str] = []
    failures: list[str] = []
    unreachable: list[str] = []
    for i, endpoint in enumerate(endpoints):
        shown = public_endpoint(endpoint)
        on_mirror = partial(_on_mirror, on_event, shown)
        try:
            ask = partial(get_revision, endpoint, repo, revision, token, timeout_s, policy)
            info = _with_retries(ask, policy, on_mirror, sleep)
            ctx = MirrorQuery(policy, endpoint, repo, revision, token, timeout_s)
            listing = _listing(info, ctx, tuple(unreachable), on_mirror)
        except Exception as err:  # every way a mirror can fail to list: said, and the next mirror is asked
            miss = _why_not_listed(err, repo, revision)
            (not_found if miss.not_found else failures).append(f"{shown}: {miss.detail}")
            unreachable += [endpoint] if miss.unreachable else []
            reason = miss.reason
        else:
            if isinstance(listing, RepoListing):
                return listing
            failures.append(f"{shown}: {listing}")
            reason = "answer lacks the commit, file sizes or hashes"
        if i + 1 < len(endpoints):
            on_event(f"mirror {shown}: {reason}; trying {public_endpoint(endpoints[i + 1])}")
    raise _not_listed(repo, revision, not_found, failures)


def _on_mirror(on_event: Callable[[str], None], shown: str, message: str) -> None:
    on_event(f"mirror {shown}: {message}")


@dataclass(frozen=True)
class _Miss:
    """Why one mirror gave no listing: for the final message (detail), the progress line (reason)."""

    detail: str
    reason: str
    not_found: bool = False  # believed only when every mirror says so
    unreachable: bool = False  # not asked again for the sizes and hashes (fallback.py)


def _why_not_listed(err: Exception, repo: str, revision: str) -> _Miss:
    hub_errors = hfhub.errors()
    if isinstance(err, ListingRefused):  # too large, too slow, or not a listing to take: this mirror fails
        return _Miss(err.reason, err.reason)
    if isinstance(err, hub_errors.RevisionNotFoundError):
        return _Miss(f"no revision {revision!r}", "revision not found", not_found=True)
    if isinstance(err, hub_errors.GatedRepoError):
        return _Miss("gated repository", "gated repository: accept its terms on the Hub and set HF_TOKEN")
    if isinstance(err, hub_errors.RepositoryNotFoundError):
        detail = f"no repository {repo!r} (or it is private and no valid token was sent)"
        return _Miss(detail, "repository not found", not_found=True)
    if isinstance(err, hub_errors.HfHubHTTPError):
        code = err.response.status_code if err.response is not None else "?"
        return _Miss(f"HTTP {code}", f"HTTP {code}")
    # network errors of any transport: this mirror is unusable now
    return _Miss(type(err).__name__, f"unreachable ({type(err).__name__})", unreachable=True)


def _not_listed(repo: str, revision: str, not_found: list[str], failures: list[str]) -> TQError:
    if not_found and not failures:
        return TQError(
            f"{repo}@{revision} not found: " + "; ".join(not_found),
            "check the repository id and the branch, tag or commit after '@' (default: main)",
        )
    return TQError(
        f"no mirror could list {repo}@{revision}: " + "; ".join(not_found + failures),
        "check --mirror / HF_ENDPOINT and the network; add another mirror with a second --mirror",
        exit_code=EXIT_FINDINGS,
    )


def _with_retries(
    call: Callable[[], Answer],
    policy: RetryPolicy,
    on_retry: Callable[[str], None],
    sleep: Callable[[float], None],
) -> Answer:
    """call(), retried like a file (docs/download.md): 408/429/5xx, timeouts and dropped connections; a
    refused connection is not retried (the mirror is down: the next one is asked)."""
    http_lib = session_http_lib()  # httpx2, or httpx under huggingface_hub 1.x
    http_error = hfhub.errors().HfHubHTTPError
    for attempt in range(1, policy.attempts + 1):
        policy.check_deadline()
        try:
            return call()
        except http_error as err:
            status = err.response.status_code if err.response is not None else None
            if status not in RETRY_STATUSES or attempt == policy.attempts:
                raise
            wait = policy.wait_s(attempt, retry_after_s(err.response.headers.get("Retry-After")))
            reason = f"HTTP {status}"
        except http_lib.ConnectError:
            raise
        except (http_lib.TransportError, http_lib.StreamError) as err:
            if attempt == policy.attempts:
                raise
            wait, reason = policy.wait_s(attempt, None), type(err).__name__
        on_retry(f"{reason}; retry {attempt}/{policy.attempts - 1} in {wait:g} s")
        sleep(wait)
    # Only a policy of no attempts gets here (--retries counts from 0, so attempts is at least 1).
    raise ValueError(f"a retry policy of {policy.attempts} attempts asks no mirror")


def _listing(
    info: RevisionAnswer, ctx: MirrorQuery, unreachable: tuple[str, ...], on_event: Callable[[str], None]
) -> RepoListing | str:
    """The listing from a revision answer, or why it cannot be verified. When the mirror ignored
    ?blobs=true, the sizes and hashes are asked where huggingface_hub asks (download/fallback.py)."""
    policy, endpoint, repo, revision, token, timeout_s = ctx
    if info.sha and info.siblings is not None and all(_complete(s) for s in info.siblings):
        return RepoListing(repo, revision, check_commit(info.sha), _files(info.siblings), endpoint, unreachable)

    try:
        commit, files, source = listing_without_blobs(ctx, info, on_event)
    except Unverifiable as why:
        return f"answer lacks the commit, file sizes or hashes ({why})"
    on_event(f"the revision API has no sizes or hashes; they come from the {source}")
    return RepoListing(repo, revision, check_commit(commit), files, endpoint, unreachable, source)


def _complete(sibling: ListedSibling) -> bool:
    if sibling.lfs is not None:
        return bool(sibling.lfs.get("sha256")) and sibling.lfs.get("size") is not None
    return sibling.size is not None and bool(sibling.blob_id)


def _files(siblings: list[ListedSibling]) -> dict[str, RemoteFile]:
    files: dict[str, RemoteFile] = {}
    for s in siblings:
        size = s.lfs["size"] if s.lfs is not None else (s.size or 0)
        sha256 = s.lfs["sha256"] if s.lfs is not None else None
        files[s.rfilename] = remote_file(s.rfilename, size, sha256, s.blob_id, s.lfs is not None)  # ListingRefused
    return files
