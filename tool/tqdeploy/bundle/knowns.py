"""What the bundle's Redactor knows before any file is read, and where its placeholder mapping goes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tqdeploy.bundle.identity import HostIdentity
from tqdeploy.fsutil import atomic_write_text
from tqdeploy.redact import Redactor, is_secret_name
from tqdeploy.safeio import FileRefused, read_key_file

NOT_SECRETS = frozenset({"true", "false", "none", "null", "yes", "no", "absent", "present"})


def seeded_redactor(state: dict[str, Any] | None, enabled: bool, identity: HostIdentity) -> Redactor:
    """Secrets known before anything is read: secret-named environment values, the API key file's key;
    names that identify the host: its names and domains, its people, the user's keywords."""
    secrets = [v for k, v in os.environ.items() if is_secret_name(k) and len(v) >= 6 and v.lower() not in NOT_SECRETS]
    key = _api_key(state)
    if key:
        secrets.append(key)
    hosts = list(identity.hostnames)
    host = str((state or {}).get("host") or "")
    if host and not host.replace(".", "").isdigit() and ":" not in host:
        hosts.append(host)
    return Redactor(
        secrets=secrets,
        hostnames=sorted(set(hosts)),
        usernames=identity.users,
        domains=identity.domains,
        keywords=identity.keywords,
        enabled=enabled,
    )


def _api_key(state: dict[str, Any] | None) -> str | None:
    """The key in the state's api_key_file: read (bounded, a regular file of one printable line, as `up`
    reads it) only to replace it wherever it appears; the file itself is never bundled."""
    path = (state or {}).get("api_key_file")
    if not isinstance(path, str) or not path:
        return None
    try:
        return read_key_file(Path(path))
    except (FileRefused, OSError):
        return None


def mapping_path_for(out: Path) -> Path:
    name = out.name.removesuffix(".gz").removesuffix(".tar").removesuffix(".tgz")
    return out.with_name(name + ".mapping.json")


def write_mapping(out: Path, mapping: dict[str, dict[str, str]]) -> Path:
    """Placeholder -> original, next to the archive (never in it), readable by this user only (0600),
    written to a new file and renamed into place: a symlink at the path is replaced, never followed."""
    path = mapping_path_for(out)
    doc = {"schema": "tqdeploy.bundle-mapping/1", "bundle": out.name, "mapping": mapping}
    atomic_write_text(path, json.dumps(doc, indent=2) + "\n", mode=0o600)
    return path
