"""The live line `up` shows while vLLM starts: phase, elapsed time, the last log line.

On a terminal it redraws one line (rich status); without one (CI, a pipe) it prints a line per phase
change, so nothing depends on a TTY. It writes to stderr: stdout stays for the result (or its JSON).
"""

from __future__ import annotations

from typing import Any

from tqdeploy.output import make_console
from tqdeploy.runtime.phases import LABELS


class ProgressLine:
    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.phase: str | None = None
        self._status: Any = None  # rich Status and Console, imported only when shown
        self._console: Any = None

    def __enter__(self) -> ProgressLine:
        if self.enabled:
            self._console = make_console(stderr=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.stop()

    def note(self, text: str) -> None:
        if self._console is not None:
            self._console.print(text, markup=False)

    def update(self, phase: str, elapsed: float, last_line: str) -> None:
        console = self._console
        if console is None:
            return
        label = LABELS.get(phase, phase)
        if console.is_terminal:
            from rich.markup import escape

            text = f"{label} [dim]{elapsed:5.0f} s[/dim]  {escape(last_line[-100:])}"
            if self._status is None:
                self._status = console.status(text)
                self._status.start()
            else:
                self._status.update(text)
        elif phase != self.phase:
            console.print(f"[{elapsed:5.0f} s] {label}", markup=False, highlight=False)
        self.phase = phase
