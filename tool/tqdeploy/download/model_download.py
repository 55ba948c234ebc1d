"""download_model: resolve, select, verify what is there, check disk, fetch the rest, record the manifest."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

from tqdeploy import __version__
from tqdeploy.adaptors import hfhub
from tqdeploy.download import buildlock, diskspace
from tqdeploy.download.fetch_run import LOCAL, PARTIAL_DIR, DownloadOutcome, FetchRun, mismatch
from tqdeploy.download.hashing import digest_files
from tqdeploy.download.manifest import MANIFEST_NAME, Manifest, ManifestFile, load_manifest, save_manifest
from tqdeploy.download.progress import Bars
from tqdeploy.download.remote import list_repo, normalize_endpoint
from tqdeploy.download.selection import WEIGHTS_INDEX, is_weight, select_serving_files
from tqdeploy.download.transfer import RetryPolicy
from tqdeploy.errors import EXIT_FINDINGS, TQError
from tqdeploy.model.jsonfile import MAX_INDEX_BYTES, read_json_file
from tqdeploy.net.urls import check_hf_endpoint_env


def default_endpoints() -> list[str]:
    """HF_ENDPOINT when set (the usual way to name a mirror), else the Hub itself."""
    return [os.environ.get("HF_ENDPOINT", "").strip() or "https://huggingface.co"]


def resolve_token(token: str | None) -> str | None:
    """The token given, else huggingface_hub's own choice: HF_TOKEN, then the token `hf auth login` stored."""
    if token is not None:
        return token or None
    return hfhub.get_token()


class DownloadOptions(TypedDict, total=False):
    """run_download's keywords that download_model passes on."""

    policy: RetryPolicy | None
    workers: int
    disk_usage: diskspace.DiskUsage
    on_event: Callable[[str], None] | None
    lock: Path | None
    find_lock: bool


def download_model(
    repo_id: str,
    revision: str,
    dest: Path,
    mirrors: list[str] | None,
    *,
    offline: bool = False,
    token: str | None = None,
    progress: bool = True,
    **options: Unpack[DownloadOptions],
) -> Manifest:
    """Download what serving ``repo_id@revision`` needs into ``dest``, verified; returns its manifest.

    ``mirrors``: endpoints tried in order (None or empty: HF_ENDPOINT, else huggingface.co).
    ``offline``: no network; raise TQError (exit 1) naming the missing files, if any.
    ``token``: sent as Authorization to every mirror; None: HF_TOKEN, else the stored login. Never printed
    or written anywhere.
    """
    if offline:
        report = check_offline(Path(dest), repo_id, revision)
        if report.missing:
            raise TQError(
                f"{len(report.missing)} file(s) of {repo_id} missing in {dest}: {', '.join(report.missing)}",
                "run the same command with network access (without --offline)",
                exit_code=EXIT_FINDINGS,
            )
        return report.manifest
    return run_download(repo_id, revision, dest, mirrors, token=token, progress=progress, **options).manifest


def run_download(
    repo_id: str,
    revision: str,
    dest: Path,
    mirrors: list[str] | None,
    *,
    token: str | None = None,
    progress: bool = True,
    policy: RetryPolicy | None = None,
    workers: int = 4,
    disk_usage: diskspace.DiskUsage = shutil.disk_usage,
    on_event: Callable[[str], None] | None = None,
    lock: Path | None = None,
    find_lock: bool = True,
) -> DownloadOutcome:
    """download_model with the details a command reports (what was fetched, reused, repaired, events).

    ``lock``: a build's tqdeploy.lock.json (or its folder) to record the resolved commit in; it must pin
    this repo and revision (checked before anything is fetched). Without it and with ``find_lock``, the
    lock of the build whose models dir ``dest`` is gets it (buildlock.find_build_lock).
    """
    check_hf_endpoint_env()  # before the import: huggingface_hub parses HF_ENDPOINT when imported

    started = time.monotonic()
    policy = (policy or RetryPolicy()).started()  # --deadline counts from here, listing included
    dest = Path(dest).expanduser().absolute()
    if hfhub.is_offline_mode():  # huggingface_hub's session refuses every request then
        raise TQError(
            "HF_HUB_OFFLINE is set, so no mirror can be asked",
            "unset HF_HUB_OFFLINE, or add --offline to list the files still missing",
        )
    if dest.exists() and not dest.is_dir():
        raise TQError(f"{dest} is a file, not a folder", "pass a folder with --to")
    endpoints = [normalize_endpoint(m) for m in (mirrors or default_endpoints())]
    token = resolve_token(token)
    old = load_manifest(dest)
    if old is not None and old.repo != repo_id:
        raise TQError(f"{dest} holds {old.repo}, not {repo_id}", "choose another folder with --to")
    notes: list[str] = []
    build_lock = buildlock.target_lock(lock, dest, repo_id, revision, notes.append) if lock or find_lock else None
    with _one_download_at_a_time(dest), Bars(progress, on_event) as bars:
        for note in notes:
            bars.event(note)
        try:
            outcome = _download(repo_id, revision, dest, endpoints, token, old, bars, policy, workers, disk_usage)
        except KeyboardInterrupt:
            bars.event(f"interrupted: partial files kept in {dest / PARTIAL_DIR}; run the same command to resume")
            raise
        except OSError as err:  # the target folder, not the network: unwritable, or the disk filled up
            raise _write_error(err, dest) from None
        outcome.events[:0] = notes
        if build_lock is not None:
            _record_commit(build_lock, outcome, revision, asked=lock is not None, on_event=bars.event)
    outcome.seconds = time.monotonic() - started
    return outcome


def _record_commit(
    build_lock: buildlock.BuildLock,
    outcome: DownloadOutcome,
    revision: str,
    *,
    asked: bool,
    on_event: Callable[[str], None],
) -> None:
    """The fetched commit into the build's lock. A lock found on its own (not ``asked`` for with --lock) that
    does not take it is a note, not a failure: the files are in place."""
    manifest = outcome.manifest
    try:
        outcome.lock = buildlock.record_commit(
            build_lock, manifest.repo, revision, manifest.commit, outcome.dest / MANIFEST_NAME
        )
    except OSError as err:
        raise TQError(
            f"the files are in place, but {build_lock.path} cannot be written: {err.strerror or err}",
            "make the build directory writable and run the same command again (it fetches nothing)",
        ) from None
    except TQError as err:
        if asked:
            raise
        outcome.events.append(f"commit not recorded: {err.message}")
        on_event(outcome.events[-1])


@contextmanager
def _one_download_at_a_time(dest: Path) -> Iterator[None]:
    """An flock on dest/.tqdeploy/download.lock: a second download into the same folder is told so at once
    instead of racing the first over the same partial files."""
    created = not dest.exists()
    lock = dest / ".tqdeploy" / "download.lock"
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise _write_error(err, dest) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TQError(
                f"another tqdeploy download is writing into {dest}", "wait for it to finish, or pass another --to"
            ) from None
        yield
    except BaseException:
        if created:  # a download that failed before fetching anything leaves no folder behind
            for path in (lock, lock.parent, dest):
                try:
                    path.unlink() if path == lock else path.rmdir()
                except OSError:
                    break
        raise
    finally:
        os.close(fd)  # releases the flock


def _write_error(err: OSError, dest: Path) -> TQError:
    where = err.filename or dest
    if err.errno == errno.ENOSPC:
        return TQError(
            f"disk full while writing {where}",
            "free space there and run the same command again: it resumes from the partial files",
            exit_code=EXIT_FINDINGS,
        )
    return TQError(f"cannot write {where}: {err.strerror or err}", "choose a writable folder with --to")


def _download(
    repo_id: str,
    revision: str,
    dest: Path,
    endpoints: list[str],
    token: str | None,
    old: Manifest | None,
    bars: Bars,
    policy: RetryPolicy,
    workers: int,
    disk_usage: diskspace.DiskUsage,
) -> DownloadOutcome:
    """Listing, index, selection, then the files; the manifest is saved as each file lands."""

    outcome = DownloadOutcome(manifest=None, dest=dest, token_present=bool(token))  # type: ignore[arg-type]
    listing = list_repo(endpoints, repo_id, revision, token or False, bars.event, policy=policy)
    headers = hfhub.build_hf_headers(
        token=token if token else False, library_name="tqdeploy", library_version=__version__
    )
    run = FetchRun(listing, dest, endpoints, headers, policy or RetryPolicy(), bars, outcome)
    run.manifest = Manifest(repo_id, revision, listing.commit)

    weight_map = None
    if WEIGHTS_INDEX in listing.files:  # tiny: fetched first, it decides which shards are needed
        _bring(run, [WEIGHTS_INDEX], old, workers)
        weight_map = _shards_of(dest / WEIGHTS_INDEX)
    selection = select_serving_files(sorted(listing.files), weight_map)
    if not any(is_weight(p) for p in selection.files):
        raise TQError(
            f"{repo_id}@{revision} has no *.safetensors weights at the top level",
            "tqdeploy serves safetensors checkpoints only; pick a repository that has them",
        )
    outcome.skipped = list(selection.skipped)
    _bring(run, [p for p in selection.files if p != WEIGHTS_INDEX], old, workers, disk_usage)
    stale = sorted({f.path for f in old.files} - set(selection.files)) if old else []
    if stale:
        bars.event(f"left in place, not part of {listing.commit[:12]}: {', '.join(stale)}")
    run.manifest.complete = True
    save_manifest(dest, run.manifest)
    shutil.rmtree(dest / ".tqdeploy", ignore_errors=True)
    outcome.manifest = run.manifest
    return outcome


def _bring(
    run: FetchRun, paths: list[str], old: Manifest | None, workers: int, disk_usage: diskspace.DiskUsage | None = None
) -> None:
    """Add ``paths`` to the manifest, keep those already in place and verified, fetch the others."""
    dest, files = run.dest, run.listing.files
    for path in paths:
        r = files[path]
        run.manifest.files.append(ManifestFile(path, r.size, r.sha256, r.git_oid, r.lfs))
    in_place = [dest / p for p in paths if (dest / p).is_file()]
    advance = run.bars.bar(f"verify {len(in_place)} file(s) in place", sum(p.stat().st_size for p in in_place))
    digests = digest_files(in_place, on_bytes=advance, with_git_oid=True)
    todo = []
    for path in paths:
        digest = digests.get(dest / path)
        problem = mismatch(digest, files[path]) if digest else "missing"
        if problem is None and digest is not None:
            was = old.file(path) if old and old.commit == run.listing.commit else None
            run.manifest.entry(path).endpoint = was.endpoint if was and was.endpoint else LOCAL
            run.manifest.entry(path).sha256 = digest.sha256
            run.outcome.reused.append(path)
            continue
        if problem != "missing":
            run.event(f"{path} in {dest} is bad ({problem}); downloading it again")
            (dest / path).unlink()
            run.outcome.repaired.append(path)
        todo.append(path)
    if disk_usage is not None:
        needed = sum(files[p].size - _size(run.partial(p)) for p in todo)
        diskspace.ensure_room(dest, needed, disk_usage)
    save_manifest(dest, run.manifest)
    run.fetch_all(todo, workers)


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _shards_of(index: Path) -> set[str] | None:
    fix = "report it to the repository's owner"
    data = read_json_file(index, MAX_INDEX_BYTES, fix)  # capped, regular file, no NaN, bounded nesting
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise TQError(f"{index} is not a safetensors index (its weight_map is not tensor -> file)", fix)
    return set(weight_map.values()) or None


@dataclass
class OfflineReport:
    manifest: Manifest
    dest: Path
    missing: list[str]  # not at their final path with the recorded size

    @property
    def ok(self) -> bool:
        return not self.missing


def check_offline(dest: Path, repo_id: str | None = None, revision: str | None = None) -> OfflineReport:
    """Without network: which files of the manifest in ``dest`` are not there."""
    dest = Path(dest).expanduser().absolute()
    manifest = load_manifest(dest)
    if manifest is None:
        raise TQError(
            f"no tqdeploy-manifest.json in {dest}: offline there is no file list to check against",
            "run `tqdeploy download REPO --to DIR` once with network access",
        )
    if repo_id and manifest.repo != repo_id:
        raise TQError(f"{dest} holds {manifest.repo}, not {repo_id}", "pass the folder of that model with --to")
    if revision and revision not in (manifest.revision, manifest.commit):
        raise TQError(
            f"{dest} holds {manifest.repo}@{manifest.revision} ({manifest.commit[:12]}), not {revision!r}",
            "offline only the recorded revision can be checked; go online to fetch another",
        )
    missing = sorted(
        f.path for f in manifest.files if not (dest / f.path).is_file() or (dest / f.path).stat().st_size != f.size
    )
    return OfflineReport(manifest, dest, missing)
