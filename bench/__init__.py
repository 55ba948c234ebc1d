"""Benchmarks (`make bench`): tqdeploy's figures side by side with the tool a user would otherwise run.

Each module in this package exposes ``run() -> list[Row]``; ``python -m bench`` (from the repository root)
runs them all (or those named on the command line) in one process run, so the ratios compare like with like.
The lab stays out of the product: this package lies beside tool/, not in it, so the wheel never carries it
(tests/test_packaging.py), and it imports tqdeploy as any user code would, from the installed package.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]  # the checkout: its venvs, tests/support and recorded fixtures


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
