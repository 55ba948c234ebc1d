"""One error funnel: every expected failure is a TQError with a remediation.

Exit codes (documented in README.md):
  0  success, no error findings
  1  the command ran and found errors (doctor/lint findings, failed verification)
  2  usage error, bad input, or an internal error
  130 interrupted (Ctrl-C)
"""

from __future__ import annotations

import os
import sys

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

DEBUG_ENV = "TQDEPLOY_DEBUG"


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


def report_error(err: BaseException) -> int:
    """Print one line (two with a remediation) to stderr and return the exit code."""
    if isinstance(err, TQError):
        line = f"tqdeploy: error: {err.message}"
        if err.remediation:
            line += f"\n  fix: {err.remediation}"
        code = err.exit_code
    else:
        line = f"tqdeploy: internal error: {type(err).__name__}: {err}"
        code = EXIT_USAGE
    if debug_enabled():
        import traceback

        traceback.print_exception(err, file=sys.stderr)
    elif not isinstance(err, TQError):
        line += f"\n  (re-run with {DEBUG_ENV}=1 for a traceback)"
    print(line, file=sys.stderr)
    return code
