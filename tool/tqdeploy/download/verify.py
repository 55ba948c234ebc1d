"""verify_dir: check a model folder against its manifest, and against the repository when reachable."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdeploy.download.fetch_run import LOCAL
from tqdeploy.download.hashing import digest_files
from tqdeploy.download.manifest import Manifest, load_manifest
from tqdeploy.download.model_download import resolve_token
from tqdeploy.download.progress import Bars, say
from tqdeploy.download.remote import list_repo, normalize_endpoint, public_endpoint
from tqdeploy.download.transfer import RetryPolicy
from tqdeploy.errors import TQError
from tqdeploy.net.urls import check_hf_endpoint_env, shown_url

if TYPE_CHECKING:  # rich is loaded where a view is drawn
    from rich.console import Console

SCHEMA = "tqdeploy.download.verify/1"


@dataclass
class FileCheck:
    path: str
    status: str  # ok | missing | size | sha256 | metadata
    detail: str = ""


@dataclass
class VerifyReport:
    dest: Path
    manifest: Manifest
    files: list[FileCheck]
    remote_checked: bool
    remote_note: str
    events: list[str] = field(default_factory=list)
    mirrors: list[str] = field(default_factory=list)  # what the repair command fetches from (--mirror, else recorded)

    @property
    def bad(self) -> list[FileCheck]:
        return [f for f in self.files if f.status != "ok"]

    @property
    def ok(self) -> bool:
        return not self.bad

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "dest": str(self.dest),
            "repo": self.manifest.repo,
            "commit": self.manifest.commit,
            "ok": self.ok,
            "remote_checked": self.remote_checked,
            "remote_note": self.remote_note,
            "files": [vars(f) for f in self.files],
        }

    def render(self, console: Console) -> None:
        m = self.manifest
        say(console, f"{m.repo} @ {m.commit[:12]} in {self.dest}: {len(self.files)} files checked")
        for f in self.bad:
            say(console, f"  BAD  {f.path}: {f.status}: {f.detail}")
        say(console, f"remote metadata: {self.remote_note}")
        if self.ok:
            say(console, f"OK: every file matches its sha256 ({m.total_bytes / 1e9:.2f} GB)")
        else:
            say(console, f"{len(self.bad)} bad file(s); `{self.repair_command}` fetches only those again")

    @property
    def repair_command(self) -> str:
        """The download that fetches the bad files again, from the mirrors this copy came from (or the ones
        --verify was given): without them it would try the default endpoint, which may be unreachable."""
        m = self.manifest
        mirrors = "".join(f" --mirror {shlex.quote(shown_url(u))}" for u in self.mirrors)
        return f"tqdeploy download {m.repo}@{m.commit}{mirrors} --to {shlex.quote(str(self.dest))}"


def verify_dir(
    dest: Path,
    mirrors: list[str] | None = None,
    *,
    token: str | None = None,
    progress: bool = True,
    workers: int | None = None,
) -> VerifyReport:
    """Hash every file of the manifest in ``dest`` (parallel) and compare with the recorded metadata.

    The manifest's own metadata is checked against the repository when one of ``mirrors`` (default:
    the endpoints recorded in the manifest) answers, so an edited manifest cannot hide a bad file.
    """
    check_hf_endpoint_env()  # a bad URL is exit 2 before any hashing, not after
    mirrors = [normalize_endpoint(m) for m in mirrors] if mirrors else None
    dest = Path(dest).expanduser().absolute()
    manifest = load_manifest(dest)
    if manifest is None:
        raise TQError(f"no tqdeploy-manifest.json in {dest}", "point --verify at a folder made by `tqdeploy download`")
    events: list[str] = []
    with Bars(progress, events.append) as bars:
        present = [dest / f.path for f in manifest.files if (dest / f.path).is_file()]
        advance = bars.bar(f"verify {len(present)} file(s)", sum(p.stat().st_size for p in present))
        digests = digest_files(present, workers=workers, on_bytes=advance, with_git_oid=True)
    checks = []
    for f in manifest.files:
        d = digests.get(dest / f.path)
        if d is None:
            checks.append(FileCheck(f.path, "missing", "not in the folder"))
        elif d.size != f.size:
            checks.append(FileCheck(f.path, "size", f"{d.size} bytes, manifest says {f.size}"))
        elif f.sha256 and d.sha256 != f.sha256:
            checks.append(FileCheck(f.path, "sha256", f"{d.sha256[:12]}..., manifest says {f.sha256[:12]}..."))
        elif not f.lfs and f.git_oid and d.git_oid != f.git_oid:
            checks.append(FileCheck(f.path, "sha256", f"git blob id {d.git_oid[:12]}..., expected {f.git_oid[:12]}..."))
        else:
            checks.append(FileCheck(f.path, "ok"))
    remote_checked, note = _against_remote(manifest, checks, mirrors, resolve_token(token) or False, events)
    recorded = sorted({f.endpoint for f in manifest.files if f.endpoint and f.endpoint != LOCAL})
    return VerifyReport(dest, manifest, checks, remote_checked, note, events, mirrors or recorded)


def _against_remote(
    manifest: Manifest, checks: list[FileCheck], mirrors: list[str] | None, token: str | bool, events: list[str]
) -> tuple[bool, str]:
    recorded = sorted({f.endpoint for f in manifest.files if f.endpoint and f.endpoint != LOCAL})
    endpoints = [normalize_endpoint(m) for m in mirrors] if mirrors else recorded
    if not endpoints:
        return False, "not checked (no mirror given and none recorded)"
    try:
        listing = list_repo(
            endpoints,
            manifest.repo,
            manifest.commit,
            token,
            events.append,
            timeout_s=10.0,
            policy=RetryPolicy(attempts=2),
        )
    except TQError as err:
        return False, f"not reachable, checked against the manifest only ({err.message})"
    by_path = {c.path: c for c in checks}
    for f in manifest.files:
        r = listing.files.get(f.path)
        if r is None:
            by_path[f.path].status, by_path[f.path].detail = "metadata", "not in the repository at this commit"
        elif (r.size, r.sha256 if r.lfs else r.git_oid) != (f.size, f.sha256 if f.lfs else f.git_oid):
            by_path[f.path].status, by_path[f.path].detail = "metadata", "manifest disagrees with the repository"
    return True, f"matches {public_endpoint(listing.endpoint)} at {manifest.commit[:12]}"
