"""What `up` (pre-flight TQ413), `doctor --api-key-file` (TQ126) and `connect` say about an API key file.

One inspection, so the three agree: the file is read with safeio.read_key_file (a regular file of at most
4 KiB holding one printable line; a folder, FIFO, device, empty or binary file is a problem, named in one
line), and its mode is looked at: readable or writable by group or others is a warning (anyone on the host
could take the key). The key itself is never kept, printed or returned.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.safeio import key_file_mode, read_key_file


@dataclass(frozen=True)
class KeyFileFacts:
    path: str
    problem: str | None = None  # why the file is not a usable key file; None when it is one
    fix: str = ""
    mode: str | None = None  # "0600"; None when the file could not be looked at
    too_open: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KeyFileFacts:
        return cls(
            str(data.get("path")),
            data.get("problem"),
            str(data.get("fix") or ""),
            data.get("mode"),
            bool(data.get("too_open")),
        )


def inspect_key_file(path: Path) -> KeyFileFacts:
    try:
        read_key_file(Path(path))
    except TQError as err:
        return KeyFileFacts(str(path), err.message, err.remediation)
    try:
        mode = key_file_mode(Path(path))
    except OSError as err:  # removed between the two looks
        return KeyFileFacts(str(path), f"cannot look at the API key file {path}: {err.strerror}", "check the path")
    return KeyFileFacts(str(path), None, mode.fix() if mode.too_open else "", f"{mode.mode:04o}", mode.too_open)
