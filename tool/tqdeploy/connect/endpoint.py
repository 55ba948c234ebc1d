"""Where a deployment answers: base URL, served model name and API key file, read from its build directory.

Sources, strongest first: the command line (--base-url, --api-key-file, --served-model-name); the run state that
`tqdeploy up` writes (BUILD_DIR/.tqdeploy/state.json, schema tqdeploy.state/1) while the server runs; the
spec copy `build` wrote (BUILD_DIR/tqdeploy.toml: model.served_name, server.host/port/api_key_file).
Relative key file paths are relative to the build directory, as compose.yaml reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tqdeploy.deployspec import load_spec
from tqdeploy.errors import TQError
from tqdeploy.filenames import SPEC_FILE_NAME
from tqdeploy.runtime.state import read_record
from tqdeploy.safeio import key_file_mode, read_key_file

if TYPE_CHECKING:
    from tqdeploy.runtime.record import StateRecord

STATE_PATH = ".tqdeploy/state.json"
STATE_SCHEMA = "tqdeploy.state/1"
SPEC_NAME = SPEC_FILE_NAME


@dataclass(frozen=True)
class Endpoint:
    root_url: str  # scheme://host:port (plus any path prefix of a proxy), never a trailing /v1
    served_name: str
    api_key_file: Path | None
    source: str  # what the address came from: "--base-url", "state", "spec"

    @property
    def openai_base_url(self) -> str:
        """What OpenAI SDKs take as base_url: the /v1 prefix included."""
        return self.root_url + "/v1"

    @property
    def host(self) -> str:
        return urlsplit(self.root_url).hostname or ""

    def read_key(self) -> str | None:
        """The API key, for requests only (never printed). None when the deployment has no key file.

        Read through safeio.read_key_file: a FIFO, device, folder, empty or binary file, or one over 4 KiB,
        is one line naming the file before any server is asked (a FIFO once hung connect).
        """
        if self.api_key_file is None:
            return None

        try:
            return read_key_file(self.api_key_file)
        except TQError as err:
            raise TQError(
                err.message, f"{err.remediation} (the same file the server reads), or pass --api-key-file"
            ) from None

    def key_file_warning(self) -> str | None:
        """One line when the key file is readable or writable by group or others; None otherwise or without one."""
        if self.api_key_file is None:
            return None
        try:
            mode = key_file_mode(self.api_key_file)
        except OSError:
            return None  # read_key says what is wrong with a file that cannot be looked at
        return f"{mode.warning()}: {mode.fix()}" if mode.too_open else None


def normalize_base_url(url: str) -> str:
    """http://h:p, http://h:p/ and http://h:p/v1 all name the same deployment root."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not a number or not 0-65535)
    except ValueError as err:  # "http://[::1": an unclosed IPv6 bracket
        raise TQError(f"--base-url {url!r} does not parse ({err})", "e.g. --base-url http://10.0.0.5:8000") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TQError(f"--base-url {url!r} is not an http(s) URL", "e.g. --base-url http://10.0.0.5:8000")
    if parts.username or parts.password:
        # Credentials in a URL end up in logs and shell history; the key belongs in --api-key-file.
        raise TQError("--base-url carries credentials", "drop user:password@ and pass --api-key-file instead")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"


def _local_address(host: str) -> str:
    """The address a client on this machine uses for a server bound to `host`."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def read_state(build_dir: Path) -> StateRecord | None:
    """The run state through the one reader that validates it (runtime/state.py), as the typed record: a FIFO,
    a device, a symlink out of the build or a hand-edited field is one line, never a hang."""
    return read_record(build_dir)


def _spec_endpoint(build_dir: Path) -> tuple[str, str, str | None] | None:
    """(root URL, served name, key file) from the build's spec copy, or None without one."""
    path = build_dir / SPEC_NAME
    if not path.is_file():
        return None

    spec = load_spec(path)
    srv = spec.server
    root = f"http://{_local_address(srv.host)}:{srv.port}"
    return root, spec.model.served_name, srv.api_key_file


def _key_path(value: str | None, base: Path) -> Path | None:
    if not value:
        return None
    p = Path(value).expanduser()
    return (p if p.is_absolute() else base / p).resolve()


def resolve_endpoint(
    build_dir: Path, *, base_url: str | None = None, api_key_file: Path | None = None, model: str | None = None
) -> Endpoint:
    state = read_state(build_dir)
    from_spec = _spec_endpoint(build_dir)
    if state is None and from_spec is None and not (base_url and model):
        raise TQError(
            f"{build_dir} holds no {SPEC_NAME} and no {STATE_PATH}",
            "pass the build directory `tqdeploy build --out` wrote, or --base-url URL and --served-model-name NAME",
        )
    root = served = key = None
    source = ""
    if from_spec:
        root, served, key = from_spec
        source = "spec"
    if state is not None:
        root = state.base_url and normalize_base_url(state.base_url) or root
        served = state.served_model_name or served
        key = state.api_key_file or key
        source = "state"
    if base_url:
        root, source = normalize_base_url(base_url), "--base-url"
    served = model or served
    if not served:
        raise TQError(
            "the deployment names no served model", "set model.served_name in the spec, or pass --served-model-name"
        )
    key_path = api_key_file.expanduser().resolve() if api_key_file else _key_path(key, build_dir.resolve())
    if root is None:  # a state without base_url and no spec copy beside it
        raise TQError(
            f"{build_dir} names no address for the deployment (state.json has no base_url, and no {SPEC_NAME})",
            "pass --base-url URL, or run `tqdeploy up` again",
        )
    return Endpoint(root, served, key_path, source)
