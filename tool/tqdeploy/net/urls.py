"""URLs of a deployment: which ones tqdeploy talks to, their origin, and how they are shown.

A URL comes from the command line, a spec or a state file: untrusted. Only http and https with a host and a
valid port are accepted. A URL is never shown with its user or password (`http://user:pw@h` becomes
`http://***@h`) nor with the value of a query parameter whose name looks like a secret; `redact_url` is the
one place that does it, for every message and every JSON field that holds a URL.

Mirror URLs (a Hub endpoint: --mirror, HF_ENDPOINT, the spec's download mirror) are checked strictly before use
(`check_endpoint`) and shown only with their credentials cut out. A mirror URL may carry user:password@ (httpx
sends it as Basic auth) or, pasted from a browser, a ?token=... query. Neither is ever printed: `shown_url` works
on free text that does not parse as a URL (`http://user:pass@[::1` makes urllib raise), so no error path can echo
the raw string. huggingface_hub logs the URLs it retries (utils/_http.py "thrown while requesting {method} {url}"),
so its log records pass through `redact_hub_logs` too. The user:password@ pattern (URL_USERINFO) is defined here,
below the redaction engine, which takes it from here (tqdeploy.redact.rules); the Redactor itself numbers hosts and
addresses for bundles, which a one-line error about a mirror should keep readable.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from tqdeploy.errors import TQError

SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
_SECRET_PARAM = re.compile(r"key|token|secret|passw|auth|sig|credential", re.I)
_USERINFO = re.compile(r"(?<=//)[^/@?#\s]*@")  # for text that does not even parse as a URL
MAX_URL_CHARS = 2048
# The one pattern for a URL's user:password@ (the scheme is group 1, the userinfo group 2): redact_url here and
# the bundle Redactor (tqdeploy.redact.rules re-exports it) cut the same thing.
URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,30}://)([^\s/'\"<>]{0,512})@")


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


_QUERY = re.compile(r"\?[^\s#'\"]*")
_FIX = "pass --mirror https://host[:port][/path] (a token for the mirror goes in HF_TOKEN)"


def shown_url(text: str) -> str:
    """text with every scheme://user:pass@ cut to scheme://***@ and every ?query to ?***; never raises."""
    return _QUERY.sub("?***", URL_USERINFO.sub(r"\1***@", str(text)))


def check_endpoint(url: str, what: str = "mirror") -> str:
    """The endpoint, stripped of a trailing '/'; TQError (exit 2, the URL shown redacted) when it is not
    http(s)://host[:port][/path]: unparsable, a port outside 1-65535, a query string or fragment."""
    raw = str(url).strip()
    shown = shown_url(raw)
    fix = _FIX if what == "mirror" else f"set {what} to https://host[:port][/path] (a token goes in HF_TOKEN)"
    try:
        parts = urlsplit(raw)
        port = parts.port  # ValueError for :99999 or a non-number
        host = parts.hostname
    except ValueError as err:
        reason = "its port is not 1-65535" if "port" in str(err).lower() else "it does not parse as a URL"
        raise TQError(f"{what} {shown!r} is not a usable URL: {reason}", fix) from None
    if parts.scheme not in ("http", "https") or not host:
        raise TQError(f"{what} {shown!r} is not an http(s) URL", fix)
    if port == 0:
        raise TQError(f"{what} {shown!r} is not a usable URL: its port is not 1-65535", fix)
    if parts.query or parts.fragment or "?" in raw or "#" in raw:
        raise TQError(f"{what} {shown!r} has a query string or fragment, which a Hub endpoint never takes", fix)
    if any(c.isspace() or ord(c) < 32 for c in raw):
        raise TQError(f"{what} {shown!r} holds whitespace or control characters", fix)
    return raw.rstrip("/")


def check_hf_endpoint_env() -> str | None:
    """HF_ENDPOINT checked before huggingface_hub is imported: it parses the variable at import, and an
    unparsable one makes that import fail with the raw URL in the message."""
    raw = os.environ.get("HF_ENDPOINT", "").strip()
    return check_endpoint(raw, "HF_ENDPOINT") if raw else None


def has_credentials(url: str) -> bool:
    return URL_USERINFO.search(str(url)) is not None


class _RedactFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            record.msg = shown_url(record.getMessage())
            record.args = None
        except Exception:  # a record that cannot be formatted is dropped rather than shown raw
            return False
        return True


_FILTER = _RedactFilter()


def redact_hub_logs() -> None:
    """Redact URLs in everything huggingface_hub logs (its own handler and the root logger's)."""
    for logger in (logging.getLogger("huggingface_hub"), logging.getLogger()):
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
        for handler in logger.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)
