"""Progress bars on stderr (rich), shown only to a person: off for --json and when stderr is no TTY.

Messages (mirror fallbacks, retries, re-downloads) go through the same object so they print above
the bars instead of through them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


class Bars:
    def __init__(self, enabled: bool, on_event: Callable[[str], None] | None = None):
        self._on_event = on_event
        self._progress = None
        if enabled and sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            from tqdeploy.output import make_console

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

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def bar(self, description: str, total: int) -> Callable[[int], None]:
        """A bar advanced by the returned function (thread-safe); a no-op without a TTY."""
        if self._progress is None or total <= 0:
            return lambda n: None
        task = self._progress.add_task(description, total=total)
        progress = self._progress
        return lambda n: progress.advance(task, n)

    def event(self, message: str) -> None:
        if self._on_event is not None:
            self._on_event(message)
        elif self._progress is not None:
            self._progress.console.print(f"tqdeploy: {message}", highlight=False, markup=False)
        else:
            print(f"tqdeploy: {message}", file=sys.stderr, flush=True)


def say(console, text: str) -> None:
    """One line of a result: never wrapped, and no rich markup (file names come from the network)."""
    console.print(text, soft_wrap=True, markup=False, highlight=False)
