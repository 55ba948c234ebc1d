"""Ctrl-C and SIGTERM while `up` waits: stop what it started, as `down` would, then exit 130 / 143.

The handlers raise Interrupted where `up` is (a poll, a sleep, a read), so `up` stops the deployment
itself. A signal that was ignored when `up` started (a shell's background job inherits SIGINT as
ignored, `nohup`) stays ignored: the caller asked for that. While stopping, both are ignored, so a
second Ctrl-C does not leave half a deployment behind.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):  # noqa: N818  (a signal, not an error: not caught by `except Exception`)
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # the shell's convention: 130 for SIGINT, 143 for SIGTERM


def _raise(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


def _restore(previous: dict[signal.Signals, Any]) -> None:  # signal.getsignal's answers: handlers, ints or None
    for sig, old in previous.items():
        signal.signal(sig, signal.SIG_DFL if old is None else old)


@contextmanager
def raising() -> Iterator[None]:
    """SIGINT/SIGTERM raise Interrupted inside the block (main thread only; elsewhere nothing changes)."""
    try:
        previous = {s: signal.getsignal(s) for s in SIGNALS}
        for sig, old in previous.items():
            if old is not signal.SIG_IGN:
                signal.signal(sig, _raise)
    except ValueError:  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    finally:
        _restore(previous)


@contextmanager
def ignored() -> Iterator[None]:
    """Neither signal interrupts the block (the clean-up after an interrupt)."""
    try:
        previous = {s: signal.signal(s, signal.SIG_IGN) for s in SIGNALS}
    except ValueError:
        yield
        return
    try:
        yield
    finally:
        _restore(previous)
