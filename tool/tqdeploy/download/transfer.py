"""One file from one mirror into a partial file that survives interruptions, resumed with Range.

Why not hf_hub_download: in huggingface_hub 2.x each download goes to a process-unique
``*.incomplete`` file that is deleted when the download fails or is interrupted
(file_download._download_to_tmp_and_move, huggingface/huggingface_hub#4228), so a Ctrl-C throws
away a half-fetched 5 GB shard. Here the partial file has a stable name and the next run asks for
the rest with a Range header. Requests go through huggingface_hub's own HTTP session and error
mapping (get_session, hf_raise_for_status), so proxies, user agent and auth behave as in the hub
client; the session drops Authorization when a redirect leaves the mirror's origin (httpx).

Retries are ours and explicit (RetryPolicy): 408, 429 and 5xx, timeouts, dropped connections
and bodies that end early are retried with exponential backoff (Retry-After honoured, capped),
each retry resuming where the partial file ends. A refused connection fails over to the next
mirror at once when there is one. Everything else (404, 401/403, a mirror serving another commit)
is not retried on that mirror.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from tqdeploy.adaptors import hfhub
from tqdeploy.adaptors.httplib import session_http_lib
from tqdeploy.errors import EXIT_FINDINGS, TQError

RETRY_STATUSES = (408, 429, 500, 502, 503, 504)
# The hub session's response: httpx's or httpx2's Response (adaptors/httplib.py picks the library), untyped here.
HTTPResponse = Any
OnBytes = Callable[[int], None] | None
# 6 h: the largest embedded checkpoint (55.6 GB) arrives in it at 2.6 MB/s (21 Mbit/s); a user on a slower link
# says so with --deadline. 24 h let a mirror trickling just above the minimum rate hold a terminal for a day.
DEFAULT_DEADLINE_S = 21_600.0


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # requests per file per mirror, the first included
    base_wait_s: float = 1.0  # then 2, 4, 8 ... seconds
    max_wait_s: float = 30.0
    retry_after_cap_s: float = 120.0  # a mirror asking for longer is skipped sooner
    # A mirror that trickles (1 byte a second never trips a read timeout) is a broken transfer: fewer than
    # min_bytes_per_s over rate_window_s is retried like a dropped connection, so every file has a deadline.
    min_bytes_per_s: float = 1024.0
    rate_window_s: float = 30.0
    # The whole download's deadline (--deadline): the minimum rate bounds one transfer, not the sum of every
    # file, mirror and retry (a trickling mirror once kept `--retries 0` running for minutes).
    deadline_s: float | None = DEFAULT_DEADLINE_S
    deadline_at: float | None = None  # time.monotonic() value; set by run_download from deadline_s

    def started(self) -> RetryPolicy:
        """This policy with its deadline counted from now."""
        return replace(self, deadline_at=time.monotonic() + self.deadline_s) if self.deadline_s else self

    def left_s(self) -> float | None:
        return None if self.deadline_at is None else self.deadline_at - time.monotonic()

    def check_deadline(self) -> None:
        left = self.left_s()
        if left is not None and left <= 0:
            raise DeadlinePassed(self.deadline_s or 0.0)

    def wait_s(self, retry_number: int, retry_after: float | None) -> float:
        if retry_after is not None:
            wait = min(max(retry_after, 0.0), self.retry_after_cap_s)
        else:
            wait = min(self.base_wait_s * 2 ** (retry_number - 1), self.max_wait_s)
        left = self.left_s()
        return wait if left is None else max(0.0, min(wait, left))


class DeadlinePassed(TQError):
    """The download ran past --deadline: every worker stops at its next chunk; partial files are kept."""

    def __init__(self, deadline_s: float):
        super().__init__(
            f"the download ran past its deadline of {deadline_s:g} s (--deadline)",
            "run the same command again to resume from the partial files, with a larger --deadline for a slow "
            "link, or add a faster mirror with --mirror",
            exit_code=EXIT_FINDINGS,
        )


class Cancelled(Exception):
    """Another worker was interrupted (Ctrl-C): stop at the next chunk, keep the partial file."""


class MirrorFailed(Exception):
    """This mirror cannot deliver this file now; the caller moves on to the next mirror."""

    def __init__(self, reason: str, *, down: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.down = down  # unreachable: skip it for the remaining files too


class BadCopy(MirrorFailed):
    """The mirror delivered a complete response whose content cannot be the file (short or too long)."""


class _Retry(Exception):
    def __init__(self, reason: str, retry_after: float | None = None, refused: bool = False):
        super().__init__(reason)
        self.reason, self.retry_after, self.refused = reason, retry_after, refused


@dataclass
class Fetch:
    url: str
    partial: Path
    size: int  # from the repository metadata
    commit: str  # X-Repo-Commit must match when the mirror sends it
    headers: dict[str, str]


def fetch(
    job: Fetch,
    policy: RetryPolicy,
    *,
    has_fallback: bool,
    on_bytes: Callable[[int], None] | None = None,
    on_retry: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Bring ``job.partial`` to ``job.size`` bytes from ``job.url``; raise MirrorFailed if it cannot."""
    job.partial.parent.mkdir(parents=True, exist_ok=True)
    retries = 0
    while True:
        have = job.partial.stat().st_size if job.partial.exists() else 0
        if have > job.size:  # cannot be a prefix of the right file
            job.partial.unlink()
            have = 0
        if have == job.size:
            return
        policy.check_deadline()
        try:
            _get_once(job, have, on_bytes, cancel, policy)
            continue  # loop re-reads the size: complete, or a short body to resume
        except _Retry as err:
            retries += 1
            if err.refused and has_fallback:
                raise MirrorFailed(f"connection refused ({err.reason})", down=True) from None
            if retries >= policy.attempts:
                raise MirrorFailed(f"{err.reason}, gave up after {retries} attempts", down=err.refused) from None
            wait = policy.wait_s(retries, err.retry_after)
            if on_retry:
                on_retry(f"{err.reason}; retry {retries}/{policy.attempts - 1} in {wait:g} s")
            if cancel is not None and cancel.wait(wait):
                raise Cancelled() from None
            elif cancel is None:
                sleep(wait)


def _get_once(
    job: Fetch, have: int, on_bytes: OnBytes, cancel: threading.Event | None, policy: RetryPolicy | None = None
) -> None:
    http_lib = session_http_lib()  # httpx2, or httpx under huggingface_hub 1.x

    headers = dict(job.headers)
    headers["Accept-Encoding"] = "identity"  # sizes must be byte counts of the file itself
    if have:
        headers["Range"] = f"bytes={have}-"
    left = policy.left_s() if policy is not None else None
    # A mirror that sends nothing waits out the read timeout: never past the deadline.
    timeout = http_lib.Timeout(10.0, read=60.0 if left is None else max(0.5, min(60.0, left)))
    try:
        with hfhub.get_session().stream(
            "GET", job.url, headers=headers, timeout=timeout, follow_redirects=True
        ) as resp:
            offset = _start_offset(job, have, resp)
            with open(job.partial, "r+b" if offset else "wb") as out:
                out.seek(offset)
                out.truncate()
                offset = _write_body(job, resp, out, offset, on_bytes, cancel, policy or RetryPolicy())
            if offset < job.size:
                # The body ended early but cleanly: the mirror's copy is short (not a dropped connection).
                raise BadCopy(f"size {offset} bytes, expected {job.size}")
    except http_lib.ConnectError as err:
        raise _Retry(f"cannot connect: {err}", refused=True) from None
    except (http_lib.TransportError, http_lib.StreamError) as err:
        raise _Retry(f"transfer broke off: {type(err).__name__}") from None


def _start_offset(job: Fetch, have: int, resp: HTTPResponse) -> int:
    """Where the response body goes in the partial file; _Retry / MirrorFailed for answers that cannot be used."""
    if resp.status_code in RETRY_STATUSES:
        raise _Retry(f"HTTP {resp.status_code}", retry_after_s(resp.headers.get("Retry-After")))
    if resp.status_code == 416:  # our partial is not a prefix the mirror recognises: start over
        job.partial.unlink(missing_ok=True)
        raise _Retry("HTTP 416 on resume, restarting the file", 0.0)
    try:
        hfhub.hf_raise_for_status(resp)
    except hfhub.errors().HfHubHTTPError as err:
        raise MirrorFailed(f"HTTP {resp.status_code}: {str(err).splitlines()[0]}") from None
    _check_commit(resp, job.commit)
    if have and resp.status_code == 200:
        return 0  # the mirror ignored Range and sends the whole file
    if have and not resp.headers.get("Content-Range", "").startswith(f"bytes {have}-"):
        job.partial.unlink(missing_ok=True)
        raise _Retry(f"mirror answered Range {have}- with {resp.headers.get('Content-Range')!r}", 0.0)
    return have


def _write_body(
    job: Fetch,
    resp: HTTPResponse,
    out: BinaryIO,
    offset: int,
    on_bytes: OnBytes,
    cancel: threading.Event | None,
    policy: RetryPolicy,
) -> int:
    window_start, window_bytes = time.monotonic(), 0
    for chunk in resp.iter_bytes():  # as received: a broken connection loses nothing already read
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        if offset + len(chunk) > job.size:
            raise BadCopy(f"mirror sent more than the {job.size} bytes the repository lists")
        out.write(chunk)
        offset += len(chunk)
        window_bytes += len(chunk)
        if on_bytes:
            on_bytes(len(chunk))
        policy.check_deadline()  # after the write: what arrived is kept for the resume
        elapsed = time.monotonic() - window_start
        if elapsed >= policy.rate_window_s:
            if window_bytes < policy.min_bytes_per_s * elapsed:
                out.flush()  # what arrived is kept: the retry resumes after it
                raise _Retry(
                    f"mirror sends {window_bytes / elapsed:.0f} B/s, under the minimum "
                    f"{policy.min_bytes_per_s:.0f} B/s over {policy.rate_window_s:g} s"
                )
            window_start, window_bytes = time.monotonic(), 0
    return offset


def _check_commit(resp: HTTPResponse, commit: str) -> None:
    for r in [*resp.history, resp]:
        served = r.headers.get("X-Repo-Commit")
        if served and served != commit:
            raise MirrorFailed(f"mirror serves commit {served[:12]}, not {commit[:12]}")


def retry_after_s(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
