"""Render a deployment spec into pinned, reproducible deployment files.

Public API:
  render_files(spec, command=None) -> dict[str, RenderedFile]   (in memory, deterministic; command: the
                                                    VllmCommand the build linted, made here when not given)
  render.build.run_build / make_build -> RenderedBuild (spec, command, flag check, accelerators, files)
  write_build(out_dir, files) -> {"written","unchanged","removed"}
  diff_build(out_dir, files) -> str                    (unified diff, for --dry-run)
  verify(build_dir) -> {"modified": [...], "missing": [...]}   (against tqdeploy.lock.json)
  skipped_outputs(spec) -> {output: reason}
"""

from tqdeploy.render.files import RenderedFile, render_files, skipped_outputs
from tqdeploy.render.lock import LOCK_NAME, read_lock, verify
from tqdeploy.render.write import diff_build, write_build

__all__ = [
    "LOCK_NAME",
    "RenderedFile",
    "diff_build",
    "read_lock",
    "render_files",
    "skipped_outputs",
    "verify",
    "write_build",
]
