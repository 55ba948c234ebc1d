"""Mirror-based, verified, resumable model download (`tqdeploy download`).

Public API for other commands (build, up):
    download_model(repo_id, revision, dest, mirrors, *, offline=False, token=None, progress=True,
                   lock=None, find_lock=True) -> Manifest
        lock: a build's tqdeploy.lock.json to record the resolved commit in (tqdeploy.download.buildlock);
        find_lock: without ``lock``, record it in the build whose models folder ``dest`` is
    verify_dir(dest, mirrors=None, *, token=None, progress=True) -> VerifyReport
    check_offline(dest, repo_id=None, revision=None) -> OfflineReport
    load_manifest(dest) -> Manifest | None
    request.from_spec(spec_file, to, mirrors, lock) -> DownloadRequest   (repo, revision, dest, mirrors)
"""

from __future__ import annotations

from tqdeploy.download.manifest import MANIFEST_NAME, Manifest, ManifestFile, load_manifest
from tqdeploy.download.model_download import (
    OfflineReport,
    check_offline,
    download_model,
    run_download,
)
from tqdeploy.download.transfer import RetryPolicy
from tqdeploy.download.verify import VerifyReport, verify_dir

__all__ = [
    "MANIFEST_NAME",
    "Manifest",
    "ManifestFile",
    "OfflineReport",
    "RetryPolicy",
    "VerifyReport",
    "check_offline",
    "download_model",
    "load_manifest",
    "run_download",
    "verify_dir",
]
