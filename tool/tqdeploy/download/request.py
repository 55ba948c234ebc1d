"""What to download and where: from REPO[@REV] and --to, or from a deployment spec (`--spec`).

From a spec (a tqdeploy.toml, or a build directory: its copy of the spec): model.repo and model.revision,
model.mirrors (tried in order; --mirror overrides them) and the target ``<storage.models_dir>/<ORG--NAME>``,
the folder `up`, the build's compose file and Kubernetes manifests serve the model from. A relative
models_dir is relative to the build directory (docs/build.md), so it is resolved against the folder of
``--lock``, else the spec's own folder when that is a build directory (it holds tqdeploy.lock.json, as
every build's copy of its spec does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tqdeploy.buildfolder import LOCK_NAME
from tqdeploy.deployspec import load_spec
from tqdeploy.download.buildlock import open_build_lock
from tqdeploy.errors import TQError
from tqdeploy.filenames import SPEC_FILE_NAME
from tqdeploy.idents import check_no_control, check_revision
from tqdeploy.runtime.deployment import spec_model_dir

DEFAULT_REVISION = "main"


@dataclass(frozen=True)
class DownloadRequest:
    repo: str
    revision: str | None  # None: not given (download: main; offline: whatever the manifest holds)
    dest: Path
    mirrors: list[str] | None  # None: HF_ENDPOINT, else huggingface.co
    lock: Path | None  # --lock as given

    @property
    def download_revision(self) -> str:
        return self.revision or DEFAULT_REVISION


def split_ref(ref: str) -> tuple[str, str | None]:
    """REPO[@REV] -> (repo, rev or None). Repository ids never contain '@'."""
    repo, _, rev = ref.partition("@")
    return repo.strip(), (rev.strip() or None)


def default_dest(repo: str) -> Path:
    return Path("models") / repo.replace("/", "--")


def from_ref(ref: str, to: Path | None, mirrors: list[str] | None, lock: Path | None) -> DownloadRequest:
    fix = "write it as ORG/NAME@REV with one '@' and no spaces, e.g. Qwen/Qwen3.6-27B@main"
    check_no_control("REPO[@REV]", ref, fix)  # before strip(): a trailing newline is refused, not trimmed
    repo, rev = split_ref(ref)
    if not re.match(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+\Z", repo):  # the repo ids plan accepts (model/hub.py)
        raise TQError(f"{ref[:200]!r} is not a repository id", "write it as ORG/NAME[@REV], e.g. Qwen/Qwen3.6-27B@main")
    if rev is not None:
        check_revision(rev, ref, fix)
    if rev is None and lock is not None:  # the build's revision, not main, unless one is named
        rev = open_build_lock(lock).revision or None
    return DownloadRequest(repo, rev, to if to is not None else default_dest(repo), mirrors, lock)


def from_spec(spec_file: Path, to: Path | None, mirrors: list[str] | None, lock: Path | None) -> DownloadRequest:
    if Path(spec_file).is_dir():  # `--spec build/default`: the build's own copy of its spec
        spec_file = Path(spec_file) / SPEC_FILE_NAME
    spec = load_spec(spec_file)
    model = spec.model
    if not model.repo:
        raise TQError(
            f"{spec_file}: model.path is a local directory ({model.path}): there is nothing to download",
            "set model.repo and model.revision in the spec to download a model",
        )
    dest = to
    if dest is None:
        # The folder `up` and serve.sh serve the model from (runtime/deployment.py), not a copy of its rule.
        base = Path(spec_file).expanduser().absolute().parent
        if not Path(spec.storage.models_dir).expanduser().is_absolute():
            if lock is not None:
                base = open_build_lock(lock).build_dir
            elif not (base / LOCK_NAME).is_file():
                raise TQError(
                    f"{spec_file}: storage.models_dir {spec.storage.models_dir!r} is relative to the build "
                    f"directory, and {base} is not one (no {LOCK_NAME} there)",
                    "pass the build directory (`--spec build/default`), or add --lock build/tqdeploy.lock.json"
                    " or --to DIR",
                )
        dest = spec_model_dir(spec, base)
    return DownloadRequest(model.repo, model.revision, dest, mirrors or list(model.mirrors), lock)
