"""The reason line a rendered script prints before it ends a start on purpose, and what tqdeploy reads from it.

serve.sh and launch_vllm.py (templates/) print `<script>: exit <code> (<reason>): <message>` as the first line of
such an exit. A failed start is classified from that line, never from the exit status alone: 67 once meant "the
key file is missing or empty" whatever had happened (a key with a trailing space, an unrelated
VLLM_RUST_FRONTEND_PATH). Without the line, an exit status is only a number (runtime/classify.py says so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Anywhere in a log line: the supervisor stamps every line it copies into the log.
REASON_LINE = re.compile(
    r"\b(serve\.sh|launch_vllm\.py|multinode\.sh): exit (\d{1,3}) \(([a-z][a-z-]{0,30})\): (.{1,400})$"
)


@dataclass(frozen=True)
class ExitReason:
    script: str
    code: int
    reason: str  # model-missing | key-file | environment | arguments
    message: str


def last_reason(lines: list[str]) -> ExitReason | None:
    """The last reason line in the log's tail (the one the exit that ended the start printed)."""
    for line in reversed(lines):
        m = REASON_LINE.search(line.rstrip())
        if m:
            return ExitReason(m.group(1), int(m.group(2)), m.group(3), m.group(4))
    return None
