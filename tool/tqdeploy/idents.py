"""Strings from outside tqdeploy: one rule for control characters, refused or shown escaped.

Identifiers tqdeploy passes on (repo ids, revisions, served model names) are refused with one line when they
hold any control character (C0, DEL or C1), before they are used: a newline in a revision once went into a Hub
URL and split the error line that quoted it. Everything else read from outside (a snapshot's GPU name, an
archive's member names, a mirror's file names, a lock's fields, error messages quoting them) is printed
through ``shown``: control characters and escape sequences become visible escapes (an ESC is ``\x1b``, so a
hostile name cannot recolour, clear or rewrite the terminal), newlines too where a field is one line, and a
long value is cut with its length, so an 8 MiB field is one short line, not 8 MiB of terminal.
"""

from __future__ import annotations

import re

from tqdeploy.errors import TQError

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# A Hub revision: a branch, tag (both may hold "/", e.g. refs/pr/1) or commit; git refuses whitespace in refs.
REVISION_RE = re.compile(r"^[^\s@\x00-\x1f\x7f-\x9f]{1,255}\Z")
# What `shown` escapes: C0, DEL, C1, and the bidirectional overrides and isolates that reorder what a
# terminal draws (a file name can look like another one).
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_KEEP_NEWLINES = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
SHOWN_LIMIT = 300  # one field of a line; a path or a GPU name is far shorter


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def shown(value: object, limit: int = SHOWN_LIMIT, one_line: bool = True) -> str:
    """``value`` as text that is safe on a terminal: control characters escaped (newlines too when
    ``one_line``), cut to ``limit`` characters with the full length said. Cut first, then escape, so a
    10 MiB value costs no more than a short one."""
    text = value if isinstance(value, str) else str(value)
    total = len(text)
    if total > limit:
        text = text[:limit]
    text = (_UNSAFE if one_line else _UNSAFE_KEEP_NEWLINES).sub(_escape, text)
    return f"{text}...({total} chars)" if total > limit else text


def has_control(text: str) -> bool:
    return bool(_CONTROL.search(text))


def check_no_control(what: str, text: str, fix: str) -> None:
    """TQError naming ``what`` (shown with repr, so the character is visible) when ``text`` holds one."""
    if has_control(text):
        raise TQError(f"{what} {text[:120]!r} holds a control character (newline, tab, NUL, escape...)", fix)


def check_revision(rev: str, ref: str, fix: str) -> None:
    if not REVISION_RE.match(rev):
        raise TQError(f"revision {rev[:120]!r} of {ref[:120]!r} is not a branch, tag or commit", fix)
