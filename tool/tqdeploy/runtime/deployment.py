"""What `up` needs to know about a build directory: its spec (as built), address, model and key paths."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tqdeploy.errors import TQError
from tqdeploy.filenames import SPEC_FILE_NAME


@dataclass
class Deployment:
    build_dir: Path
    spec: object  # tqdeploy.spec.Spec
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
        return self.spec.variant  # type: ignore[attr-defined]


def _under(build_dir: Path, value: str) -> Path:
    """Spec paths are relative to the build directory (docs/build.md)."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else build_dir / path


def load_deployment(build_dir: Path) -> Deployment:
    from tqdeploy.render.lock import read_lock
    from tqdeploy.spec import load_spec

    build_dir = Path(build_dir).resolve()
    if not (build_dir / "serve.sh").is_file():
        raise TQError(
            f"{build_dir} has no serve.sh: not a tqdeploy build directory",
            f"run `tqdeploy build --out {build_dir}` first (or pass the directory it wrote)",
        )
    lock = read_lock(build_dir)
    spec = load_spec(build_dir / SPEC_FILE_NAME, check_vllm_flags=False)
    m, srv, storage = spec["model"], spec["server"], spec["storage"]
    if m["path"]:
        model_dir = _under(build_dir, m["path"])
    else:
        model_dir = _under(build_dir, storage["models_dir"]) / spec.model_dir_name
    key = _under(build_dir, srv["api_key_file"]) if srv["api_key_file"] else None
    return Deployment(
        build_dir=build_dir,
        spec=spec,
        host=srv["host"],
        port=int(srv["port"]),
        served_model_name=m["served_name"],
        model_dir=model_dir,
        api_key_file=key,
        spec_sha256=str(lock.get("spec_sha256") or spec.spec_hash),
    )
