"""URLs of a deployment: which ones tqdeploy talks to, their origin, and how they are shown.

A URL comes from the command line, a spec or a state file: untrusted. Only http and https with a host and a
valid port are accepted. A URL is never shown with its user or password (`http://user:pw@h` becomes
`http://***@h`) nor with the value of a query parameter whose name looks like a secret; `redact_url` is the
one place that does it, for every message and every JSON field that holds a URL.
"""

from __future__ import annotations

import ipaddress
import re
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from tqdeploy.errors import TQError

SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
_SECRET_PARAM = re.compile(r"key|token|secret|passw|auth|sig|credential", re.I)
_USERINFO = re.compile(r"(?<=//)[^/@?#\s]*@")  # for text that does not even parse as a URL
MAX_URL_CHARS = 2048


class Origin(NamedTuple):
    scheme: str
    host: str
    port: int


def redact_url(url: object) -> str:
    """The URL without user, password or secret-looking query values; safe for messages and JSON."""
    text = str(url)[:MAX_URL_CHARS]
    try:
        parts = urlsplit(text)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = "***@" + netloc.rsplit("@", 1)[1]
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, "***" if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*")
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return _USERINFO.sub("***@", text)


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def origin(url: str) -> Origin:
    """(scheme, host, port) of an accepted URL; raises ValueError for one that has none."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in SCHEMES or not host:
        raise ValueError(f"not an http(s) URL with a host: {redact_url(url)}")
    port = parts.port  # raises ValueError for a port outside 0..65535 or not a number
    return Origin(scheme, host, port if port is not None else DEFAULT_PORTS[scheme])


def same_origin(a: str, b: str) -> bool:
    try:
        return origin(a) == origin(b)
    except ValueError:
        return False


def check_url(url: str, label: str = "--url", *, credentials: bool = False) -> str:
    """The URL without a trailing /, when it is http(s) with a host and a valid port; else one-line TQError.

    ``credentials``: whether user:password@ may stay in it (never shown either way); the commands refuse it,
    the key belongs in a key file.
    """
    shown = redact_url(url)
    if not isinstance(url, str) or len(url) > MAX_URL_CHARS or any(ord(c) < 0x21 for c in url):
        raise TQError(f"{label} {shown!r} is not a URL", "e.g. http://127.0.0.1:8000")
    try:
        if origin(url).port == 0:
            raise ValueError("port 0")
        parts = urlsplit(url)
    except ValueError:
        raise TQError(
            f"{label} {shown!r} is not an http:// or https:// URL with a host and a port in 1..65535",
            "e.g. http://127.0.0.1:8000 (tqdeploy talks only HTTP to a deployment)",
        ) from None
    if (parts.username or parts.password) and not credentials:
        raise TQError(
            f"{label} {shown!r} carries a user or password",
            "drop user:password@ from the URL; pass the API key as a file (--api-key-file)",
        )
    return url.rstrip("/")
