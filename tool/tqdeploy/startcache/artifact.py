"""export_build / import_build: a build's start-up caches to one artifact and back, with the results the
`tqdeploy cache` command prints (human and --json, schemas tqdeploy.cache-export/1 and tqdeploy.cache-import/1).

The volume is the build's VLLM_CACHE_ROOT: BUILD/.tqdeploy/cache/vllm for the process runtime (runtime/backends/),
or the folder --volume names (the compose service's and the init container's /cache/vllm). The build's
interpreter (--python, TQDEPLOY_VLLM_PYTHON, the last `up`'s) answers for torch and vLLM.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.startcache import hostfacts, pack, secrets, unpack
from tqdeploy.startcache.compare import Difference, differences, refusals
from tqdeploy.startcache.pack import walk
from tqdeploy.startcache.unpack import read_manifest

if TYPE_CHECKING:  # rich is loaded where the view is drawn
    from rich.console import Console


@dataclass
class BuildContext:
    build: Path
    volume: Path
    python: str
    key: str | None
    lock: dict[str, Any]
    model_dir: Path


@dataclass
class ExportResult:
    archive: str
    files: int
    unpacked_bytes: int
    packed_bytes: int
    seconds: float
    facts: dict[str, str]
    left_behind: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": "tqdeploy.cache-export/1", **self.__dict__, "seconds": round(self.seconds, 3)}

    def render(self, console: Console) -> None:
        console.print(
            f"exported {self.files} files, {self.unpacked_bytes / 1e6:.1f} MB -> {self.archive} "
            f"({self.packed_bytes / 1e6:.1f} MB, {self.seconds:.1f} s)"
        )
        f = self.facts
        console.print(
            f"valid for: vLLM {f.get('vllm')}, torch {f.get('torch')}, {f.get('device')} "
            f"(capability {f.get('capability')}, ISA {f.get('cpu_isa')}), driver {f.get('driver')}"
        )
        if self.left_behind:
            console.print(f"left behind {len(self.left_behind)} link(s): {', '.join(self.left_behind[:5])}")


def export_build(ctx: BuildContext, out: Path) -> ExportResult:
    started = time.monotonic()
    if not ctx.volume.is_dir() or not pack.walk(ctx.volume)[1]:
        raise TQError(
            f"{ctx.volume} holds no caches to export",
            "start the build once (`tqdeploy up BUILD`, then `tqdeploy down BUILD`) so its caches fill",
        )
    facts, model_files = hostfacts.gather(ctx.python, ctx.lock, ctx.model_dir)
    extra = {"cpu_model": hostfacts.cpu_model(), "build": str(ctx.lock.get("name", ""))[:100]}
    manifest = pack.build_manifest(ctx.volume, facts, model_files, extra)
    held = secrets.files_holding(ctx.volume, [e.path for e in manifest.files], secrets.needles(ctx.key))
    if held:
        shown = ", ".join(f"{p} ({why})" for p, why in held[:3])
        raise TQError(
            f"{len(held)} cache file(s) hold a secret, nothing exported: {shown}",
            "remove those files (or the secret from vLLM's environment) and export again",
        )
    _may_replace(out)
    size = pack.write_archive(ctx.volume, manifest, out)
    return ExportResult(str(out), len(manifest.files), manifest.total_bytes, size, time.monotonic() - started,
                        facts, list(manifest.left_behind))  # fmt: skip


def _may_replace(out: Path) -> None:
    """An existing file at out is replaced only when it is an artifact (its first member a tqdeploy.cache/1
    manifest): anything else may be the user's, and is never overwritten."""
    if not os.path.lexists(out):
        return
    try:
        if out.is_symlink() or not out.is_file():
            raise TQError("not a regular file")
        read_manifest(out)
    except TQError:
        raise TQError(
            f"{out} exists and is not a cache artifact: not overwritten", "give -o a new path, or move that file"
        ) from None


@dataclass
class ImportResult:
    archive: str
    volume: str
    imported: bool
    forced: bool
    files: int
    unpacked_bytes: int
    seconds: float
    differences: list[Difference]

    @property
    def exit_code(self) -> int:
        return 0

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "differences"}
        return {"schema": "tqdeploy.cache-import/1", **d, "seconds": round(self.seconds, 3),
                "differences": [x.to_dict() for x in self.differences]}  # fmt: skip

    def render(self, console: Console) -> None:
        for d in self.differences:
            word = "forced past" if d.refuses else "note"
            console.print(f"{word}: {d.line()}" + ("" if d.refuses else " (vLLM's own compile cache misses)"))
        console.print(
            f"imported {self.files} files, {self.unpacked_bytes / 1e6:.1f} MB from {self.archive} into "
            f"{self.volume} ({self.seconds:.1f} s)"
        )


def import_build(ctx: BuildContext, archive: Path, force: bool = False) -> ImportResult:
    started = time.monotonic()
    manifest = unpack.read_manifest(archive)
    facts, model_files = hostfacts.gather(ctx.python, ctx.lock, ctx.model_dir)
    diffs = differences(manifest, facts, model_files)
    refused = refusals(diffs)
    if refused and not force:
        raise TQError(
            f"{archive} was made for another build or host: {'; '.join(d.line() for d in refused[:6])}"
            + (f" (and {len(refused) - 6} more)" if len(refused) > 6 else ""),
            "export the caches on a host and build that match (or, knowing the difference enters no cache key, "
            "import with --force: those caches then miss and vLLM rebuilds them)",
        )
    done = unpack.extract(archive, manifest, ctx.volume, secrets.needles(ctx.key))
    return ImportResult(str(archive), str(ctx.volume), True, bool(refused), done["files"], done["bytes"],
                        time.monotonic() - started, diffs)  # fmt: skip


UP_ID = "TQ442"


def import_for_up(
    build_dir: Path, artifact: str, volume: Path, make_context: Callable[[], BuildContext]
) -> Finding | None:
    """What `up` does for a build whose spec names storage.cache_artifact (relative to the build): import_into.
    make_context is called only when the volume is unused (it asks the build's interpreter for its versions)."""
    path = Path(artifact)
    path = path if path.is_absolute() else Path(build_dir) / path
    if _volume_used(volume):
        return None  # skip before asking the interpreter anything: the common case of every later start
    try:
        ctx = make_context()
    except TQError as err:
        return _refused(path, volume, err)
    return import_into(ctx, path)


def _volume_used(volume: Path) -> bool:
    return volume.is_dir() and bool(walk(volume)[1])


def _refused(path: Path, volume: Path, err: TQError) -> Finding:
    return Finding(
        UP_ID,
        Severity.WARN,
        f"the cache artifact was not imported, this start is cold: {err.message}",
        {"artifact": str(path), "volume": str(volume)},
        err.remediation,
        "start-up",
    )


def import_into(ctx: BuildContext, path: Path) -> Finding | None:
    """Import into a volume no start has written to: None when it already holds caches (an earlier import or start:
    nothing to do); TQ442 ok with the counts when imported; TQ442 warn when refused: the start goes on, cold. The
    same for `up` (process runtime) and the containers' one-shot import (startcache/container.py)."""
    if _volume_used(ctx.volume):
        return None
    try:
        result = import_build(ctx, path)
    except TQError as err:
        return _refused(path, ctx.volume, err)
    return Finding(
        UP_ID,
        Severity.OK,
        f"imported {result.files} cache files ({result.unpacked_bytes / 1e6:.1f} MB) from {path.name} "
        f"in {result.seconds:.1f} s",
        {
            "artifact": str(path),
            "volume": str(ctx.volume),
            "files": result.files,
            "notes": [d.fact for d in result.differences],
        },  # fmt: skip
        "",
        "start-up",
    )
