"""The build folder as one contract: where `build` puts the rendered files and `up` its state, logs and caches.

Every user (render, download, runtime, bundle, profile) takes a path from here instead of joining strings,
so a name changes in one place and a reader can see the whole layout at once:

    BUILD/
      tqdeploy.toml           the spec as built (filenames.SPEC_FILE_NAME)
      tqdeploy.lock.json      pins and the sha256 of every rendered file (render/lock.py)
      serve.sh nginx.conf Dockerfile ... rendered files (render/files.py's template_plan; compose.yaml and
                              download.sh only when the spec has them)
      .tqdeploy/              what tqdeploy writes while it runs the build (never rendered, never locked)
        state.json state.lock the deployment's state (runtime/state.py) and the flock of its writers
        logs/server.log       -> the current run's stamped log logs/server-<UTC stamp>.log; supervisor.err
        cache/vllm cache/huggingface   the process runtime's VLLM_CACHE_ROOT and HF_HOME
        bin/                  the process runtime's python3 / vllm shims
        profile/              `tqdeploy profile`'s default output

Import-light on purpose (pathlib only): the bottom of the package graph, loaded by `--help` paths too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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


def folder(build_dir: Path | str) -> BuildFolder:
    """The resolved build folder (the paths runtime writes into state.json are absolute)."""
    return BuildFolder.resolved(build_dir)
