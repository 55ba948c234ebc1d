"""Identifiers tqdeploy passes on (repo ids, revisions, served model names): one rule for control characters.

A newline in a revision once went into a Hub URL and split the error line that quoted it; a NUL or escape
in a served name would land in serve.sh, manifests and terminal output. Every identifier is refused with one
line when it holds any control character (C0, DEL or C1), before it is used or printed unquoted.
"""

from __future__ import annotations

import re

from tqdeploy.errors import TQError

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# A Hub revision: a branch, tag (both may hold "/", e.g. refs/pr/1) or commit; git refuses whitespace in refs.
REVISION_RE = re.compile(r"^[^\s@\x00-\x1f\x7f-\x9f]{1,255}\Z")


def has_control(text: str) -> bool:
    return bool(_CONTROL.search(text))


def check_no_control(what: str, text: str, fix: str) -> None:
    """TQError naming ``what`` (shown with repr, so the character is visible) when ``text`` holds one."""
    if has_control(text):
        raise TQError(f"{what} {text[:120]!r} holds a control character (newline, tab, NUL, escape...)", fix)


def check_revision(rev: str, ref: str, fix: str) -> None:
    if not REVISION_RE.match(rev):
        raise TQError(f"revision {rev[:120]!r} of {ref[:120]!r} is not a branch, tag or commit", fix)
