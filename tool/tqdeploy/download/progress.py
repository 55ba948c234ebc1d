"""Progress on stderr: rich bars on a terminal; without one (nohup, CI, a pipe) one line at every tenth of
the way and at least every 30 s, so a long download is never silent; off for --json.

Messages (mirror fallbacks, retries, re-downloads) go through the same object so they print above
the bars instead of through them.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from tqdeploy.errors import shown
from tqdeploy.output import make_console

if TYPE_CHECKING:  # rich is loaded where a view is drawn
    from rich.console import Console

LINE_EVERY_S = 30.0  # without a terminal: a line at least this often while bytes arrive
LINE_LIMIT = 8000  # characters of one printed line (a list of skipped files can be long; 8 MiB is not)


class Bars:
    def __init__(self, enabled: bool, on_event: Callable[[str], None] | None = None):
        self._on_event = on_event
        self._progress = None
        self._lines = enabled and not sys.stderr.isatty()
        if enabled and sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=make_console(stderr=True),
                transient=False,
            )

    def __enter__(self) -> Bars:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def bar(self, description: str, total: int) -> Callable[[int], None]:
        """A bar advanced by the returned function (thread-safe); a no-op without a TTY."""
        if self._lines and total > 0:
            return _LineProgress(description, total)
        if self._progress is None or total <= 0:
            return lambda n: None
        task = self._progress.add_task(description, total=total)
        progress = self._progress
        return lambda n: progress.advance(task, n)

    def event(self, message: str) -> None:
        message = shown(message, LINE_LIMIT)  # names and reasons from a mirror: escaped, cut
        if self._on_event is not None:
            self._on_event(message)
        elif self._progress is not None:
            self._progress.console.print(f"tqdeploy: {message}", highlight=False, markup=False)
        else:
            print(f"tqdeploy: {message}", file=sys.stderr, flush=True)


class _LineProgress:
    """Plain progress lines on stderr (thread-safe): at each tenth of the total, and every LINE_EVERY_S."""

    def __init__(self, description: str, total: int):
        self.description, self.total, self.done = description, total, 0
        self._lock = threading.Lock()
        self._tenth = 0
        self._last = time.monotonic()

    def __call__(self, n: int) -> None:
        with self._lock:
            self.done = min(self.total, self.done + n)
            tenth = self.done * 10 // self.total
            now = time.monotonic()
            if tenth > self._tenth or now - self._last >= LINE_EVERY_S:
                self._tenth, self._last = tenth, now
                mb = 1_000_000
                print(
                    f"tqdeploy: {self.description}: {self.done / mb:.1f} of {self.total / mb:.1f} MB "
                    f"({100 * self.done // self.total}%)",
                    file=sys.stderr,
                    flush=True,
                )


def say(console: Console, text: str) -> None:
    """One line of a result: never wrapped, no rich markup and no control characters (file names come from
    the network, or from a manifest anyone may have edited: idents.shown)."""
    console.print(shown(text, LINE_LIMIT), soft_wrap=True, markup=False, highlight=False)
