"""What the bundle's Redactor knows before any file is read, and where its placeholder mapping goes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tqdeploy.redact import GENERIC_USERS, Redactor, is_secret_name


def seeded_redactor(state: dict[str, Any] | None, enabled: bool) -> Redactor:
    """Secrets known before anything is read: secret-named environment values, the API key file's keys;
    names that identify the host: its hostname, its users."""
    import socket

    flags = {"true", "false", "none", "null", "yes", "no"}
    secrets = [v for k, v in os.environ.items() if is_secret_name(k) and len(v) >= 6 and v.lower() not in flags]
    key_file = (state or {}).get("api_key_file")
    if key_file:
        try:
            secrets += Path(key_file).read_text(encoding="utf-8", errors="replace")[:65536].split()
        except OSError:
            pass
    hosts = {socket.gethostname()}
    if state and state.get("host") and not str(state["host"]).replace(".", "").isdigit():
        hosts.add(str(state["host"]))
    return Redactor(secrets=secrets, hostnames=sorted(hosts), usernames=_user_names(), enabled=enabled)


def _user_names() -> list[str]:
    """This user (and the one behind sudo). Not every account of the host: service accounts such as
    `vllm` are words of the product too, and replacing them everywhere would garble the bundle."""
    import getpass

    names = {getpass.getuser(), os.environ.get("SUDO_USER", "")}
    return sorted(n for n in names if n and n not in GENERIC_USERS)


def mapping_path_for(out: Path) -> Path:
    name = out.name.removesuffix(".gz").removesuffix(".tar").removesuffix(".tgz")
    return out.with_name(name + ".mapping.json")


def write_mapping(out: Path, mapping: dict[str, dict[str, str]]) -> Path:
    """Placeholder -> original, next to the archive (never in it), readable by this user only (0600)."""
    path = mapping_path_for(out)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"schema": "tqdeploy.bundle-mapping/1", "bundle": out.name, "mapping": mapping}, fh, indent=2)
        fh.write("\n")
    return path
