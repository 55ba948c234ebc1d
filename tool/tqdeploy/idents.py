"""Strings from outside tqdeploy: one rule for control characters, refused or shown escaped.

Identifiers tqdeploy passes on (repo ids, revisions, served model names) are refused with one line when they
hold any control character (C0, DEL or C1), before they are used: a newline in a revision once went into a Hub
URL and split the error line that quoted it. Everything else read from outside (a snapshot's GPU name, an
archive's member names, a mirror's file names, a lock's fields, error messages quoting them) is printed
through ``shown`` (defined in tqdeploy.errors, so that the error funnel uses it too): control characters
and escape sequences become visible escapes (an ESC is ``\x1b``, so a hostile name cannot recolour, clear
or rewrite the terminal), newlines too where a field is one line, and a long value is cut with its length,
so an 8 MiB field is one short line, not 8 MiB of terminal.
"""

from __future__ import annotations

import re

from tqdeploy.errors import TQError, has_control, shown

__all__ = ["REVISION_RE", "check_no_control", "check_revision", "has_control", "shown"]

# A Hub revision: a branch, tag (both may hold "/", e.g. refs/pr/1) or commit; git refuses whitespace in refs.
REVISION_RE = re.compile(r"^[^\s@\x00-\x1f\x7f-\x9f]{1,255}\Z")


def check_no_control(what: str, text: str, fix: str) -> None:
    """TQError naming ``what`` (shown with repr, so the character is visible) when ``text`` holds one."""
    if has_control(text):
        raise TQError(f"{what} {text[:120]!r} holds a control character (newline, tab, NUL, escape...)", fix)


def check_revision(rev: str, ref: str, fix: str) -> None:
    if not REVISION_RE.match(rev):
        raise TQError(f"revision {rev[:120]!r} of {ref[:120]!r} is not a branch, tag or commit", fix)
