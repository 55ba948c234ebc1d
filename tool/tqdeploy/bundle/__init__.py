"""`tqdeploy bundle`: a support bundle that is safe to attach to a public bug report, and replayable.

Public API:
  tqdeploy.bundle.build.build_bundle(build_dir, out, *, logs_since_s=None, redact=True, collectors=None
               (COLLECTORS), identity=None, force=False) -> BundleResult  (identity: bundle.identity.HostIdentity)
      imported from its module, not from here: it imports every collector and through them the doctor, the
      planner and the runtimes, 150 ms that `doctor --snapshot bundle.tar.gz` (replay, below) does not need.
  inspect_bundle(path, identity=None) -> InspectResult  (verifies hashes, scans every member, nested too)
  snapshot_from_bundle(path) -> dict               (the host snapshot, for `doctor --snapshot bundle.tar.gz`)

Collectors (tqdeploy.bundle.collect_build, collect_host; listed in build.COLLECTORS) each declare the products
they need and provide (collector.py, products.py), are run in the order those give, and return files for the
archive or raise Absent; the builder redacts every byte (and every member name) through one
tqdeploy.redact.Redactor before anything is written; a file a collector may not read safely (a symlink, a FIFO,
outside the build) is recorded as skipped.
"""

from __future__ import annotations

from tqdeploy.bundle.inspect import InspectResult, inspect_bundle
from tqdeploy.bundle.replay import is_bundle, snapshot_from_bundle

__all__ = ["InspectResult", "inspect_bundle", "is_bundle", "snapshot_from_bundle"]
