"""The API key file a keyed spec names: `build` creates it when it is missing, and never touches it again.

The key is the user's data once it exists: it is not a rendered file, the lock does not list it (so
`build --check` never reports it and no later build replaces or removes it), and an existing file is never
overwritten, whatever it holds. A new one gets a random key (secrets.token_urlsafe(32): 43 printable
characters, what safeio.read_key_file accepts) in mode 0600, its missing folders in mode 0700, written to a
temporary file and linked into place, so a file that appears meanwhile is kept and never half-written.
Only a path inside the build directory is created: a spec naming /etc/... or ../x gets a note, not a file.
The key itself is never printed, returned or logged; the result says where the file is.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdeploy.deployspec.model import Spec
from tqdeploy.errors import TQError
from tqdeploy.safeio import is_within, key_file_mode

KEY_FILE_MODE = 0o600
KEY_DIR_MODE = 0o700


@dataclass
class KeyFile:
    path: str  # as the user would type it: the build dir joined with the spec's value
    status: str  # "created" | "present" | "would-create" | "not-created"
    note: str = ""  # why it was not created, or that an existing file is readable by others

    def to_dict(self) -> dict[str, Any]:
        out = {"path": self.path, "status": self.status}
        if self.status in ("created", "would-create"):
            out["mode"] = f"{KEY_FILE_MODE:04o}"
        if self.note:
            out["note"] = self.note
        return out

    def line(self) -> str:
        if self.status == "created":
            return f"created the API key file {self.path} (mode {KEY_FILE_MODE:04o})"
        if self.status == "would-create":
            return f"a build would create the API key file {self.path} (mode {KEY_FILE_MODE:04o})"
        if self.status == "present":
            return f"API key file {self.path}: present, kept" + (f" ({self.note})" if self.note else "")
        return f"API key file {self.path} not created: {self.note}"


def _display(out_dir: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else Path(out_dir) / path


def ensure_key_file(spec: Spec, out_dir: Path, dry_run: bool = False) -> KeyFile | None:
    """Create the spec's API key file if it is missing (see the module doc); None for an unkeyed spec."""
    value = spec.server.api_key_file
    if not value:
        return None
    path = _display(out_dir, value)
    if os.path.lexists(path):  # a file, a link, anything: the user's, left as it is
        return _present(path)
    # Taken literally (no '..' out) and with every existing folder's links followed, it stays in the build.
    if not _inside(path, out_dir) or (Path(out_dir).is_dir() and not is_within(_nearest_existing(path), out_dir)):
        return KeyFile(
            str(path),
            "not-created",
            f"it lies outside the build directory {out_dir}; create it yourself "
            f"(umask 077; python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > {path})",
        )
    if dry_run:
        return KeyFile(str(path), "would-create")
    try:
        created = _create(path, Path(out_dir))
    except OSError as err:
        raise TQError(
            f"cannot create the API key file {path}: {err.strerror or err}",
            "make the build directory writable, or create the key file yourself (mode 0600)",
        ) from None
    return KeyFile(str(path), "created") if created else _present(path)


def _inside(path: Path, out_dir: Path) -> bool:
    root = Path(os.path.abspath(out_dir))
    target = Path(os.path.abspath(path))
    return root in target.parents


def _nearest_existing(path: Path) -> Path:
    for parent in path.parents:
        if parent.exists():
            return parent
    return Path("/")


def _present(path: Path) -> KeyFile:
    note = ""
    try:
        mode = key_file_mode(path)
        if path.is_file() and mode.too_open:
            note = f"{mode.warning()}; fix: {mode.fix()}"
    except OSError:
        pass
    return KeyFile(str(path), "present", note)


def _create(path: Path, out_dir: Path) -> bool:
    """Write a new random key at ``path``; False when a file appeared there first (it is kept)."""
    missing = [p for p in reversed(path.parents) if not p.exists()]
    for folder in missing:
        folder.mkdir(mode=KEY_DIR_MODE, exist_ok=True)
        os.chmod(folder, KEY_DIR_MODE)  # mkdir's mode is masked by the umask
    if not is_within(path.parent, out_dir):  # a folder swapped for a link meanwhile: write nothing there
        raise OSError(f"{path.parent} no longer lies inside {out_dir}")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_urlsafe(32) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, KEY_FILE_MODE)
        try:
            os.link(tmp, path)  # unlike rename, never replaces a file that appeared meanwhile
        except FileExistsError:
            return False
        return True
    finally:
        os.unlink(tmp)
