"""`tqdeploy bundle`: a support bundle that is safe to attach to a public bug report, and replayable.

Public API:
  build_bundle(build_dir, out, *, logs_since_s=None, redact=True, collectors=None) -> BundleResult
  inspect_bundle(path) -> InspectResult            (lists, verifies hashes, scans again for secrets)
  snapshot_from_bundle(path) -> dict               (the host snapshot, for `doctor --snapshot bundle.tar.gz`)

Collectors (tqdeploy.bundle.collect_build, collect_host) each return files for the archive or raise Absent;
the builder redacts every byte through one tqdeploy.redact.Redactor before anything is written.
"""

from __future__ import annotations

from tqdeploy.bundle.build import BundleResult, build_bundle
from tqdeploy.bundle.inspect import InspectResult, inspect_bundle
from tqdeploy.bundle.replay import is_bundle, snapshot_from_bundle

__all__ = ["BundleResult", "InspectResult", "build_bundle", "inspect_bundle", "is_bundle", "snapshot_from_bundle"]
