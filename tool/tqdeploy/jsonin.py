"""JSON from outside tqdeploy (a snapshot, a bundle's manifest, a state file) parsed with bounds.

Python's json module recurses once per nesting level: a document nested 100,000 deep ends in a RecursionError
(or, run deep enough, a crashed interpreter), and one nested 900 deep parses but then exhausts every
recursive walk over it. So the depth is measured on the raw text before parsing (a linear pass over the
brackets outside strings), and anything deeper than any real document is one TQError naming the input.
NaN and Infinity (which Python accepts and JSON does not) and integers past Python's digit limit are the
same one-line refusal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from itertools import accumulate
from typing import Any

from tqdeploy.errors import TQError

MAX_DEPTH = 64  # tqdeploy's own documents nest under 10 levels
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def text_depth(text: str) -> int:
    """Deepest bracket nesting of JSON text, strings skipped: regexes and accumulate, no Python-level loop
    per character and no recursion."""
    brackets = _NOT_BRACKET.sub("", _STRINGS.sub("", text))
    return max(accumulate(_STEP[c] for c in brackets), default=0)


def nesting_depth(value: Any, stop_at: int = MAX_DEPTH) -> int:
    """Deepest nesting of lists/dicts in a parsed value, iteratively; stops counting past ``stop_at``."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > stop_at:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def loads(data: bytes | str, where: str, fix: str, max_depth: int = MAX_DEPTH, constants: bool = False) -> Any:
    """The parsed document, or TQError naming ``where``: not UTF-8, not JSON, or nested past ``max_depth``.
    ``constants``: let NaN/Infinity through, for a caller whose own check names the field that holds one."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data  # not json's UTF-16/32 guessing
    except UnicodeDecodeError:
        raise TQError(f"{where} is not UTF-8 text", fix) from None
    if text_depth(text) > max_depth:
        raise TQError(f"{where} nests deeper than {max_depth} levels: not the document tqdeploy expects", fix)
    try:
        return json.loads(text) if constants else json.loads(text, parse_constant=_no_constant)
    except RecursionError:  # unreachable after the depth check; kept so no path can escape as exit 3
        raise TQError(f"{where} nests too deeply to parse", fix) from None
    except MemoryError:
        raise TQError(f"{where} is too large to parse", fix) from None
    except ValueError as err:  # JSONDecodeError, NaN/Infinity, integers over Python's 4300-digit limit
        raise TQError(f"{where} is not JSON ({str(err)[:120]})", fix) from None
