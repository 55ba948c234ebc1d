"""One error funnel: every expected failure is a TQError with a remediation.

Exit codes (documented in README.md):
  0  success, no error findings
  1  the command ran and found errors (doctor/lint findings, failed verification)
  2  usage error or bad input (a TQError, or a usage error of the command line)
  3  internal error: an unexpected exception, i.e. a bug in tqdeploy
  130 interrupted (Ctrl-C)
"""

from __future__ import annotations

import os
import sys

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

DEBUG_ENV = "TQDEPLOY_DEBUG"
MESSAGE_LIMIT = 2000  # characters of one error line; a message quoting a 900 KB field is cut, its length said


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
    from tqdeploy.idents import shown  # messages quote names and values from outside: escaped, cut

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
        import traceback

        traceback.print_exception(err, file=sys.stderr)
    print(line, file=sys.stderr)
    return code
