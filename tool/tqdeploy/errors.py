"""One error funnel: every expected failure is a TQError with a remediation; and the one sanitizer (``shown``)
of text from outside that anything prints, the funnel's messages first.

Exit codes (documented in README.md):
  0  success, no error findings
  1  the command ran and found errors (doctor/lint findings, failed verification)
  2  usage error or bad input (a TQError, or a usage error of the command line)
  3  internal error: an unexpected exception, i.e. a bug in tqdeploy
  130 interrupted (Ctrl-C)
"""

from __future__ import annotations

import os
import re
import sys
import traceback

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

DEBUG_ENV = "TQDEPLOY_DEBUG"
MESSAGE_LIMIT = 2000  # characters of one error line; a message quoting a 900 KB field is cut, its length said


# -- text from outside, made safe to print --------------------------------------------------------------------
# The one sanitizer of everything tqdeploy prints that came from outside (error messages, findings' titles and
# evidence, a snapshot's GPU name, an archive's member names, a mirror's file names). It lives here, at the
# bottom of the package, because the error funnel below prints through it and every module may import this
# one; tqdeploy.idents re-exports it beside the identifier rules built on the same control-character class.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
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
    """A C0, DEL or C1 control character anywhere in text."""
    return bool(_CONTROL.search(text))


class TQError(Exception):
    """An expected failure: one line for the user plus how to fix it."""

    def __init__(self, message: str, remediation: str = "", exit_code: int = EXIT_USAGE):
        super().__init__(message)
        self.message = message
        self.remediation = remediation
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


def debug_enabled() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def report_error(err: BaseException, prog: str = "tqdeploy") -> int:
    """Print the error to stderr, under prog (the command or script that failed), and return the exit code.

    A TQError is one line (two with its fix) and exits with its own code (2 unless it says otherwise).
    Anything else is a bug in tqdeploy: one line naming the exception, exit 3; TQDEPLOY_DEBUG=1 adds
    the traceback.
    """
    # messages quote names and values from outside: escaped and cut by `shown`
    if isinstance(err, TQError):
        line = f"{prog}: error: {shown(err.message, MESSAGE_LIMIT)}"
        if err.remediation:
            line += f"\n  fix: {shown(err.remediation, MESSAGE_LIMIT)}"
        code = err.exit_code
    else:
        detail = shown(_first_line(str(err)), MESSAGE_LIMIT)
        name = type(err).__name__
        line = f"{prog}: internal error: {name}: {detail}" if detail else f"{prog}: internal error: {name}"
        if not debug_enabled():
            line += f" (a bug in tqdeploy; re-run with {DEBUG_ENV}=1 for a traceback)"
        code = EXIT_INTERNAL
    if debug_enabled():
        traceback.print_exception(err, file=sys.stderr)
    print(line, file=sys.stderr)
    return code
