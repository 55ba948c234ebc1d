"""Benchmarks (`make bench`): tqdeploy's figures side by side with the tool a user would otherwise run.

Each module in this package exposes ``run() -> list[Row]``; ``python -m tqdeploy.bench`` runs them
all (or those named on the command line) in one process run, so the ratios compare like with like.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Row:
    name: str  # what was measured, e.g. "doctor wall (median of 5)"
    ours: float
    theirs: float | None  # the comparison tool's figure, None when it is not installed
    unit: str  # "s", "MB", "MB/s"
    goal: str = ""  # the stated goal, e.g. "<= 1.0 s"
    theirs_name: str = ""  # e.g. "python -m vllm.collect_env"

    @property
    def ratio(self) -> float | None:
        if self.theirs in (None, 0):
            return None
        return self.ours / self.theirs
