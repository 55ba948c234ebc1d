"""The outputs of `tqdeploy download`: one object per mode, each with to_dict() and render(console).

No token ever reaches these: a download reports only whether one was present.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tqdeploy.download.fetch_run import DownloadOutcome
from tqdeploy.download.model_download import OfflineReport
from tqdeploy.download.progress import say

if TYPE_CHECKING:  # rich is loaded where a view is drawn
    from rich.console import Console

DOWNLOAD_SCHEMA = "tqdeploy.download/1"
OFFLINE_SCHEMA = "tqdeploy.download.offline/1"


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB"


@dataclass
class DownloadResult:
    outcome: DownloadOutcome

    def to_dict(self) -> dict[str, Any]:
        o, m = self.outcome, self.outcome.manifest
        return {
            "schema": DOWNLOAD_SCHEMA,
            "repo": m.repo,
            "revision": m.revision,
            "commit": m.commit,
            "dest": str(o.dest),
            "complete": m.complete,
            "files": [vars(f) for f in m.files],
            "fetched": o.fetched,
            "reused": o.reused,
            "repaired": o.repaired,
            "skipped": o.skipped,
            "events": o.events,
            "bytes_fetched": o.bytes_fetched,
            "seconds": round(o.seconds, 3),
            "token": "present" if o.token_present else "absent",
            "lock": o.lock.to_dict() if o.lock is not None else None,
        }

    def render(self, console: Console) -> None:
        o, m = self.outcome, self.outcome.manifest
        say(console, f"{m.repo}@{m.revision} -> commit {m.commit}")
        say(
            console,
            f"{len(m.files)} files ({_gb(m.total_bytes)}) in {o.dest}, every one verified (sha256 / git blob id)",
        )
        rate = o.bytes_fetched / o.seconds / 1e6 if o.seconds > 0 else 0.0
        say(
            console,
            f"fetched {len(o.fetched)} ({_gb(o.bytes_fetched)}, {rate:.1f} MB/s), already in place"
            f" {len(o.reused)}, bad and fetched again {len(o.repaired)}"
            + (f": {', '.join(o.repaired)}" if o.repaired else ""),
        )
        served = sorted({f.endpoint for f in m.files if f.endpoint})
        say(console, f"served by: {', '.join(served)}; token: {'present' if o.token_present else 'absent'}")
        if o.skipped:
            say(console, f"not needed for serving, skipped: {', '.join(o.skipped)}")
        say(console, f"manifest: {o.dest / 'tqdeploy-manifest.json'}")
        if o.lock is not None:
            was = f" (was {o.lock.previous})" if o.lock.previous else ""
            say(console, f"lock: pins.model.resolved_commit = {m.commit}{was} in {o.lock.path}")


@dataclass
class OfflineResult:
    report: OfflineReport

    def to_dict(self) -> dict[str, Any]:
        r, m = self.report, self.report.manifest
        return {
            "schema": OFFLINE_SCHEMA,
            "repo": m.repo,
            "commit": m.commit,
            "dest": str(r.dest),
            "ok": r.ok,
            "missing": r.missing,
            "files": len(m.files),
        }

    def render(self, console: Console) -> None:
        r, m = self.report, self.report.manifest
        if r.ok:
            say(
                console,
                f"{m.repo} @ {m.commit[:12]}: all {len(m.files)} files present in {r.dest}"
                " (sizes checked; --verify checks hashes)",
            )
            return
        say(console, f"{m.repo} @ {m.commit[:12]}: {len(r.missing)} of {len(m.files)} files missing in {r.dest}:")
        for path in r.missing:
            say(console, f"  {path}")
