"""What `up` needs to know about a build directory: its spec (as built), address, model and key paths."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tqdeploy.buildfolder import folder, read_lock
from tqdeploy.deployspec import load_spec
from tqdeploy.deployspec.model import Spec
from tqdeploy.errors import TQError


@dataclass
class Deployment:
    build_dir: Path
    spec: Spec
    host: str
    port: int
    served_model_name: str
    model_dir: Path
    api_key_file: Path | None
    spec_sha256: str

    @property
    def connect_host(self) -> str:
        """Where a client on this host connects: a wildcard bind is reached on loopback."""
        if self.host in ("0.0.0.0", "::", ""):
            return "127.0.0.1"
        return f"[{self.host}]" if ":" in self.host else self.host

    @property
    def base_url(self) -> str:
        return f"http://{self.connect_host}:{self.port}"

    @property
    def variant(self) -> str:
        return self.spec.variant


def _under(build_dir: Path, value: str) -> Path:
    """Spec paths are relative to the build directory (docs/build.md)."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else build_dir / path


def spec_model_dir(spec: Spec, build_dir: Path) -> Path:
    """Where a build serves its model from: model.path, else storage.models_dir/<ORG--NAME> (serve.sh's
    TQ_MODEL_DIR); `download --spec` puts the model here too, so `up` finds what was downloaded."""
    m = spec.model
    if m.path:
        return _under(build_dir, m.path)
    return _under(build_dir, spec.storage.models_dir) / spec.model_dir_name


def spec_api_key_file(spec: Spec, build_dir: Path) -> Path | None:
    """The file server.api_key_file names, relative paths under the build dir; None for an unkeyed spec."""
    value = spec.server.api_key_file
    return _under(build_dir, value) if value else None


def load_deployment(build_dir: Path) -> Deployment:

    build_dir = Path(build_dir).resolve()
    if not str(build_dir).isprintable():  # its paths go into state.json and one-line messages
        raise TQError(
            f"build folder {str(build_dir)!r} contains a newline or another control character",
            "move or symlink the build to a path without control characters",
        )
    where = folder(build_dir)
    if not where.serve_sh.is_file():
        raise TQError(
            f"{build_dir} has no serve.sh: not a tqdeploy build directory",
            f"run `tqdeploy build --out {build_dir}` first (or pass the directory it wrote)",
        )
    lock = read_lock(build_dir)
    spec = load_spec(where.spec)
    m, srv = spec.model, spec.server
    return Deployment(
        build_dir=build_dir,
        spec=spec,
        host=srv.host,
        port=int(srv.port),
        served_model_name=m.served_name,
        model_dir=spec_model_dir(spec, build_dir),
        api_key_file=spec_api_key_file(spec, build_dir),
        spec_sha256=str(lock.get("spec_sha256") or spec.spec_hash),
    )
