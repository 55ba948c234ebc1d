"""One milestone seen in a start-up log, or a probe's own observation: what the timeline is built from."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Event:
    key: str
    phase: str
    line_no: int
    time: float | None  # seconds on the log's own clock (epoch for stamps)
    source: str  # "stamp" | "vllm-clock" | "probe"
    reported_s: float | None = None
    text: str = ""
