"""Mirror URLs: checked strictly before use, and shown only with their credentials cut out.

A mirror URL may carry user:password@ (httpx sends it as Basic auth) or, pasted from a browser, a
?token=... query. Neither is ever printed: `shown_url` works on text that does not parse as a URL
(`http://user:pass@[::1` makes urllib raise), so no error path can echo the raw string.
huggingface_hub logs the URLs it retries (utils/_http.py "thrown while requesting {method} {url}"),
so its log records pass through `redact_hub_logs` too.
The user:password@ pattern is tqdeploy.redact's (redact_rules.URL_USERINFO); the Redactor itself numbers
hosts and addresses for bundles, which a one-line error about a mirror should keep readable.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit

from tqdeploy.errors import TQError
from tqdeploy.redact_rules import URL_USERINFO  # the one pattern for user:password@ (tqdeploy.redact)

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
    import os

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
