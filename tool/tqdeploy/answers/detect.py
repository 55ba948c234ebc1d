"""Pure detectors over recorded answers: a loop at the end of a greedy answer, an answer that changed when the
same prompt was asked again, an expected word missing, a perplexity above its bound. No I/O: the probes
(probes.py) collect what the server said, these decide; the unit tests feed them recorded answers."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

# A loop is the last LOOP_MIN_TOKENS or more tokens repeating one unit of at most LOOP_MAX_PERIOD tokens at least
# LOOP_MIN_REPEATS times. Short enough to catch "the the the" and a sentence said three times, long enough that a
# list ("1. 2. 3.") or a repeated word in plain prose does not count.
LOOP_MAX_PERIOD = 16
LOOP_MIN_REPEATS = 3
LOOP_MIN_TOKENS = 12


def loop_period(tokens: Sequence[str]) -> int | None:
    """The period of the loop the tokens end in, or None when they do not end in one."""
    n = len(tokens)
    for period in range(1, LOOP_MAX_PERIOD + 1):
        span = max(period * LOOP_MIN_REPEATS, LOOP_MIN_TOKENS)
        if span > n:
            break
        tail = tokens[n - span :]
        if all(tail[i] == tail[i - period] for i in range(period, span)):
            return period
    return None


def first_difference(a: Sequence[str], b: Sequence[str]) -> int | None:
    """Index of the first token where two answers part, or None when they are the same."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


_WORD = re.compile(r"[a-z0-9]+")


def mentions(text: str, expected: Sequence[str]) -> bool:
    """Whether the answer holds any of the expected words as a whole word, case and punctuation ignored."""
    words = set(_WORD.findall(text.lower()))
    return any(all(part in words for part in _WORD.findall(e.lower())) for e in expected)


def perplexity(logprobs: Sequence[float]) -> float:
    """exp of the mean negative log-probability of the text's tokens (natural log, as vLLM reports them)."""
    if not logprobs:
        raise ValueError("no token log-probabilities")
    return math.exp(-sum(logprobs) / len(logprobs))
