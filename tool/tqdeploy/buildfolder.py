"""The build folder as one contract: where `build` puts the rendered files and `up` its state, logs and caches.

Every user (render, download, runtime, bundle, profile) takes a path from here instead of joining strings,
so a name changes in one place and a reader can see the whole layout at once:

    BUILD/
      tqdeploy.toml           the spec as built (filenames.SPEC_FILE_NAME)
      tqdeploy.lock.json      pins and the sha256 of every rendered file (render/lock.py writes it; read_lock
                              and verify below read it back, for every package)
      serve.sh nginx.conf Dockerfile ... rendered files (render/files.py's template_plan; compose.yaml and
                              download.sh only when the spec has them)
      .tqdeploy/              what tqdeploy writes while it runs the build (never rendered, never locked)
        state.json state.lock the deployment's state (runtime/state.py) and the flock of its writers
        logs/server.log       -> the current run's stamped log logs/server-<UTC stamp>.log; supervisor.err
        cache/vllm cache/huggingface   the process runtime's VLLM_CACHE_ROOT and HF_HOME
        bin/                  the process runtime's python3 / vllm shims
        profile/              `tqdeploy profile`'s default output

Import-light on purpose (the standard library and tqdeploy.errors only): the bottom of the package graph, loaded
by `--help` paths too.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.filenames import SPEC_FILE_NAME

STATE_DIR = ".tqdeploy"
LOCK_NAME = "tqdeploy.lock.json"
STATE_NAME = "state.json"
SERVE_SCRIPT = "serve.sh"
DOWNLOAD_SCRIPT = "download.sh"
NGINX_CONF = "nginx.conf"
COMPOSE_FILE = "compose.yaml"
CURRENT_LOG = "server.log"
SUPERVISOR_ERR = "supervisor.err"
LOCK_SCHEMA = "tqdeploy.lock/1"
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class BuildFolder:
    """The paths of one build folder (``root`` is taken as given; ``resolved()`` pins it down)."""

    root: Path

    @classmethod
    def resolved(cls, build_dir: Path | str) -> BuildFolder:
        return cls(Path(build_dir).resolve())

    # rendered by `tqdeploy build`
    @property
    def spec(self) -> Path:
        return self.root / SPEC_FILE_NAME

    @property
    def lock(self) -> Path:
        return self.root / LOCK_NAME

    @property
    def serve_sh(self) -> Path:
        return self.root / SERVE_SCRIPT

    @property
    def download_sh(self) -> Path:
        return self.root / DOWNLOAD_SCRIPT

    @property
    def nginx_conf(self) -> Path:
        return self.root / NGINX_CONF

    @property
    def compose(self) -> Path:
        return self.root / COMPOSE_FILE

    # written while the build runs
    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def state_json(self) -> Path:
        return self.state_dir / STATE_NAME

    @property
    def state_lock(self) -> Path:
        return self.state_dir / "state.lock"

    @property
    def logs(self) -> Path:
        return self.state_dir / "logs"

    @property
    def current_log(self) -> Path:
        return self.logs / CURRENT_LOG

    @property
    def supervisor_err(self) -> Path:
        return self.logs / SUPERVISOR_ERR

    @property
    def cache(self) -> Path:
        return self.state_dir / "cache"

    @property
    def vllm_cache(self) -> Path:
        return self.cache / "vllm"

    @property
    def hf_home(self) -> Path:
        return self.cache / "huggingface"

    @property
    def bin(self) -> Path:
        return self.state_dir / "bin"

    @property
    def profile(self) -> Path:
        return self.state_dir / "profile"


def own_dir(build_dir: Path | str, path: Path | str, mode: int = 0o755) -> Path:
    """``path``, a folder inside the build (e.g. BUILD/.tqdeploy/nodes), made where missing; TQError when it or any
    folder between the build and it is a symlink or not a folder.

    Every folder tqdeploy writes under .tqdeploy comes through here: a `.tqdeploy/nodes` that was a link once had
    `up` write node folders and worker records at the link's target, outside the build. The build folder itself
    may be reached through links (it is resolved); below it nothing is followed.
    """
    root = Path(build_dir).resolve()
    target = Path(path) if Path(path).is_absolute() else root / path
    try:
        parts = target.relative_to(root).parts
    except ValueError:
        raise TQError(f"{target} is outside the build {root}", "tqdeploy writes only inside the build") from None
    root.mkdir(parents=True, exist_ok=True)  # the build folder itself, as the writers made it before own_dir
    here = root
    for part in parts:
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            try:
                os.mkdir(here, mode)
            except FileExistsError:  # made meanwhile (another tqdeploy process): looked at below
                pass
            st = os.lstat(here)
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            what = f"a symlink (to {os.readlink(here)})" if stat.S_ISLNK(st.st_mode) else "not a folder"
            raise TQError(
                f"{here} is {what}: tqdeploy writes under {root / STATE_DIR} only into folders of the build itself",
                f"remove {here} (tqdeploy makes the folder again)",
            )
    return here


def folder(build_dir: Path | str) -> BuildFolder:
    """The resolved build folder (the paths runtime writes into state.json are absolute)."""
    return BuildFolder.resolved(build_dir)


# The lock (written by render/lock.py make_lock), read back as untrusted input.
def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_lock(build_dir: Path) -> dict[str, Any]:
    path = Path(build_dir) / LOCK_NAME
    try:
        if path.exists() and (not path.is_file() or path.stat().st_size > 1 << 20):  # a FIFO would block
            raise json.JSONDecodeError("not a regular file of at most 1 MiB", "", 0)
        lock = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        raise TQError(
            f"{path} not found: {build_dir} is not a tqdeploy build directory",
            "pass the directory `tqdeploy build` wrote (it holds tqdeploy.lock.json)",
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise TQError(f"{path}: not valid JSON ({str(err)[:120]})", "re-run `tqdeploy build` to rewrite it") from None
    files = lock.get("files") if isinstance(lock, dict) else None
    if (
        not isinstance(lock, dict)
        or lock.get("schema") != LOCK_SCHEMA
        or not isinstance(files, dict)
        or not all(isinstance(k, str) and isinstance(v, str) and _SHA256_RE.match(v) for k, v in files.items())
    ):
        raise TQError(f"{path}: not a {LOCK_SCHEMA} lock file", "re-run `tqdeploy build` to rewrite it")
    return lock


def verify(build_dir: Path) -> dict[str, list[str]]:
    """Files of the lock that are modified or missing (paths relative to the build dir)."""
    lock = read_lock(build_dir)
    drift: dict[str, list[str]] = {"modified": [], "missing": []}
    root = Path(build_dir).resolve()
    for rel, digest in sorted(lock["files"].items()):
        path = (root / rel).resolve()
        if root not in path.parents:
            drift["modified"].append(rel)  # a lock pointing outside its directory is itself tampered
            continue
        if path.exists() and not path.is_file():  # a folder, FIFO or device where a rendered file was
            drift["modified"].append(rel)
            continue
        try:
            data = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            drift["missing"].append(rel)
            continue
        if sha256(data) != digest:
            drift["modified"].append(rel)
    return drift
