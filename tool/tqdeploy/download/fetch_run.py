"""Fetching the files of one resolved listing: mirrors in order, parallel workers, each file verified.

Every file travels through ``<dest>/.tqdeploy/partial/<path>.part`` and is renamed to its final
path only after its size and hash match the repository metadata, so nothing half-written or
unverified ever sits at a final path.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from tqdeploy.adaptors import hfhub
from tqdeploy.download import transfer
from tqdeploy.download.buildlock import LockRecord
from tqdeploy.download.hashing import Digest, digest_file
from tqdeploy.download.listing import RemoteFile, RepoListing
from tqdeploy.download.manifest import Manifest, save_manifest
from tqdeploy.download.progress import Bars
from tqdeploy.download.remote import public_endpoint
from tqdeploy.errors import EXIT_FINDINGS, TQError

PARTIAL_DIR = ".tqdeploy/partial"
LOCAL = "local"  # endpoint recorded for a file that was already in place and verified
BAD_COPIES_PER_MIRROR = 2  # a copy failing its hash is fetched once more before the next mirror


def mismatch(digest: Digest, remote: RemoteFile) -> str | None:
    """Why a local file is not the repository's file, or None when it is."""
    if digest.size != remote.size:
        return f"size {digest.size} bytes, expected {remote.size}"
    if remote.sha256 and digest.sha256 != remote.sha256:
        return f"sha256 {digest.sha256[:12]}..., expected {remote.sha256[:12]}..."
    if not remote.lfs and remote.git_oid and digest.git_oid != remote.git_oid:
        return f"git blob id {digest.git_oid[:12]}..., expected {remote.git_oid[:12]}..."
    return None


@dataclass
class DownloadOutcome:
    manifest: Manifest
    dest: Path
    fetched: list[str] = field(default_factory=list)  # downloaded in this run
    reused: list[str] = field(default_factory=list)  # already in place, verified
    repaired: list[str] = field(default_factory=list)  # in place but bad: named and fetched again
    skipped: list[str] = field(default_factory=list)  # in the repo, not needed for serving
    events: list[str] = field(default_factory=list)
    bytes_fetched: int = 0
    seconds: float = 0.0
    token_present: bool = False
    lock: LockRecord | None = None  # when the commit was recorded in a build's lock


class FetchRun:
    def __init__(
        self,
        listing: RepoListing,
        dest: Path,
        endpoints: list[str],
        headers: dict[str, str],
        policy: transfer.RetryPolicy,
        bars: Bars,
        outcome: DownloadOutcome,
    ):
        self.listing, self.dest, self.endpoints, self.headers = listing, dest, endpoints, headers
        self.policy, self.bars, self.outcome = policy, bars, outcome
        self.down: set[str] = set(listing.unreachable)
        self.lock = threading.Lock()
        self.cancel = threading.Event()
        self.manifest = Manifest(listing.repo, listing.revision, listing.commit)

    def event(self, message: str) -> None:
        with self.lock:
            self.outcome.events.append(message)
        self.bars.event(message)

    def partial(self, path: str) -> Path:
        return self.dest / PARTIAL_DIR / f"{path}.part"

    def fetch_one(self, path: str, on_bytes: Callable[[int], None]) -> tuple[str, str]:
        """Bring one verified file to its final path; returns (endpoint that served it, sha256)."""
        remote, partial, reasons = self.listing.files[path], self.partial(path), []
        fetched = 0

        def counted(n: int) -> None:
            nonlocal fetched
            fetched += n
            on_bytes(n)

        for endpoint in [e for e in self.endpoints if e not in self.down]:
            shown = public_endpoint(endpoint)
            url = hfhub.hf_hub_url(self.listing.repo, path, revision=self.listing.commit, endpoint=endpoint)
            job = transfer.Fetch(url, partial, remote.size, self.listing.commit, self.headers)
            for _ in range(BAD_COPIES_PER_MIRROR):
                later = [e for e in self.endpoints if e not in self.down and e != endpoint]
                try:
                    transfer.fetch(
                        job,
                        self.policy,
                        has_fallback=bool(later),
                        on_bytes=counted,
                        on_retry=lambda m, s=shown: self.event(f"{path} from {s}: {m}"),  # type: ignore[misc]
                        cancel=self.cancel,
                    )
                    digest = digest_file(partial)
                    problem = mismatch(digest, remote)
                except transfer.BadCopy as err:
                    problem = err.reason
                except transfer.MirrorFailed as err:
                    if err.down:
                        self.down.add(endpoint)
                    reasons.append(f"{shown}: {err.reason}")
                    nxt = f"; trying {public_endpoint(later[0])}" if later else ""
                    self.event(f"{path}: mirror {shown} failed: {err.reason}{nxt}")
                    break
                finally:
                    with self.lock:
                        self.outcome.bytes_fetched += fetched
                    fetched = 0
                if problem is None:
                    (self.dest / path).parent.mkdir(parents=True, exist_ok=True)
                    os.replace(partial, self.dest / path)
                    return endpoint, digest.sha256
                partial.unlink(missing_ok=True)
                reasons.append(f"{shown}: {problem}")
                self.event(f"{path} from {shown} failed verification ({problem}); downloading it again")
        raise TQError(
            f"{path}: no mirror delivered a verified copy ({'; '.join(reasons) or 'every mirror is down'})",
            "re-run the same command to resume (partial files are kept), or add a mirror with --mirror",
            exit_code=EXIT_FINDINGS,
        )

    def record(self, path: str, endpoint: str, sha256: str) -> None:
        with self.lock:
            entry = self.manifest.entry(path)
            entry.endpoint = public_endpoint(endpoint) if endpoint != LOCAL else LOCAL
            entry.sha256 = sha256  # small files are known by blob id: record their sha256 too
            save_manifest(self.dest, self.manifest)

    def fetch_all(self, paths: list[str], workers: int) -> None:
        if not paths:
            return
        total = sum(self.listing.files[p].size for p in paths)
        advance = self.bars.bar(f"download {len(paths)} file(s)", total)
        failures: list[TQError] = []
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(paths)))) as pool:
            futures = {pool.submit(self.fetch_one, p, advance): p for p in paths}
            try:
                for future in as_completed(futures):
                    try:
                        self.record(futures[future], *future.result())
                        self.outcome.fetched.append(futures[future])
                    except TQError as err:
                        failures.append(err)
            except BaseException:  # Ctrl-C: stop the workers at their next chunk, keep partial files
                self.cancel.set()
                for future in futures:
                    future.cancel()
                raise
        if failures:
            if len(failures) == 1:
                raise failures[0]
            raise TQError(
                f"{len(failures)} files could not be downloaded: " + " | ".join(e.message for e in failures),
                failures[0].remediation,
                exit_code=EXIT_FINDINGS,
            )
