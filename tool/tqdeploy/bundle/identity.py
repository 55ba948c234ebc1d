"""Who this host is, for the redaction (sos clean's parsers): its names and domains, its people's accounts,
the words the user names. Read here, at the adapter boundary, so tests pass a real passwd-shaped file.
"""

from __future__ import annotations

import getpass
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from tqdeploy.errors import TQError
from tqdeploy.redact.rules import GENERIC_USERS
from tqdeploy.safeio import FileRefused, read_bytes, read_text

PASSWD = Path("/etc/passwd")
PASSWD_LIMIT = 4 * 1024 * 1024
KEYWORD_FILE_LIMIT = 256 * 1024
FIRST_PERSON_UID = 1000  # Debian/Ubuntu/Fedora: accounts of people from here; below are system accounts
NOBODY_UID = 65534


@dataclass
class HostIdentity:
    hostnames: list[str] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)


def people(passwd: Path = PASSWD) -> list[str]:
    """Accounts of people in a passwd-format file (uid >= 1000, not nobody), plus the current user and the
    one behind sudo; root and service names such as `vllm` are words of the product, never replaced."""
    names = {os.environ.get("SUDO_USER", "")}
    try:
        names.add(getpass.getuser())
    except (KeyError, OSError):
        pass
    try:
        text = read_text(passwd, PASSWD_LIMIT, "the passwd file", tail=False)
    except FileRefused:
        text = ""
    for line in text.splitlines():
        fields = line.split(":")
        if len(fields) >= 3 and fields[2].isdigit():
            uid = int(fields[2])
            if FIRST_PERSON_UID <= uid != NOBODY_UID:
                names.add(fields[0])
    return sorted(n for n in names if n and n.lower() not in GENERIC_USERS)


def host_names() -> list[str]:
    """The short and the full name of this host (the full one only where the resolver answers locally)."""
    names = {socket.gethostname()}
    try:
        names.add(read_bytes(Path("/etc/hostname"), 256, "/etc/hostname", follow_symlinks=True).decode().strip())
    except (FileRefused, UnicodeDecodeError):
        pass
    return sorted(n for n in names if n and n != "localhost")


def read_keywords(path: Path) -> list[str]:
    """--keyword-file: one word per line, `#` comments and blank lines skipped."""
    text = read_text(path, KEYWORD_FILE_LIMIT, "the --keyword-file")
    words = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    short = [w for w in words if len(w) < 3]
    if short:
        raise TQError(
            f"--keyword-file {path}: {len(short)} keyword(s) shorter than 3 characters",
            "list words of 3 characters or more: shorter ones would replace parts of every word",
        )
    return words


def this_host(passwd: Path = PASSWD, domains: tuple[str, ...] = (), keywords: tuple[str, ...] = ()) -> HostIdentity:
    return HostIdentity(hostnames=host_names(), domains=list(domains), users=people(passwd), keywords=list(keywords))
