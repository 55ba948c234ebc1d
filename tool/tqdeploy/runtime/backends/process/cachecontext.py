"""The start-up cache artifact's view of a build (startcache.artifact.BuildContext): its volume, interpreter, key,
lock and model folder, read through the deployment. Here rather than in startcache, so that startcache stays below
runtime and render in the layer order (runtime's `up` imports an artifact before serve.sh starts)."""

from __future__ import annotations

from pathlib import Path

from tqdeploy.buildfolder import folder, read_lock
from tqdeploy.errors import TQError
from tqdeploy.runtime.backends.process.launch import resolve_python
from tqdeploy.runtime.backends.process.section import previous_python
from tqdeploy.runtime.deployment import load_deployment
from tqdeploy.runtime.state import read_record
from tqdeploy.safeio import read_key_file
from tqdeploy.startcache.artifact import BuildContext


def cache_context(build_dir: Path, volume: Path | None, python: str | None) -> BuildContext:
    dep = load_deployment(build_dir)
    key = read_key_file(dep.api_key_file, within=None) if dep.api_key_file and dep.api_key_file.is_file() else None
    return BuildContext(
        build=dep.build_dir,
        volume=Path(volume).resolve() if volume else folder(dep.build_dir).vllm_cache,
        python=resolve_python(python, _previous_python(dep.build_dir)),
        key=key,
        lock=read_lock(dep.build_dir),
        model_dir=dep.model_dir,
    )


def _previous_python(build: Path) -> str | None:
    """The interpreter the last `up` ran, when --python names none (the state is read, never trusted blindly)."""
    try:
        return previous_python(read_record(build), build)
    except (TQError, OSError):
        return None
