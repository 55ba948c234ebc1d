"""The did-you-mean for a value outside a fixed set of choices, shared by lint (TQ302) and plan.

One cutoff for all, so `plan --kv-cache-dtype turboquant_4bit` and `lint -- vllm serve M --kv-cache-dtype
turboquant_4bit` suggest the same name.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6  # difflib's ratio; lint's TQ302 has used it since its first release


def closest(value: str, choices: Iterable[object]) -> str | None:
    close = difflib.get_close_matches(value, [str(c) for c in choices], n=1, cutoff=CUTOFF)
    return close[0] if close else None


def use_hint(value: str, choices: Iterable[object]) -> str:
    """`use NAME` for a near miss, else `use one of: A, B, ...`."""
    names = [str(c) for c in choices]
    near = closest(value, names)
    return f"use {near}" if near else f"use one of: {', '.join(names)}"
