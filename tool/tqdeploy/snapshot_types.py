"""The types a host snapshot's fields must have, checked when a snapshot is loaded.

A snapshot is replayed from a file anyone may have edited (`--snapshot FILE`, a bundle). Its numbers are
checked for sign and finiteness (snapshot._check_numbers); this module checks types: a GPU's fields against
the GPU dataclass's own annotations, and the few numbers the checks and the planner compute with inside
the free-form sections (driver, shm, disk, limits). A string as memory_total or a name that is a list once
made `plan` exit 3 and several doctor checks report themselves as failed; now the load names the field.
"""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin

# Keys inside the dict sections that checks and the planner do arithmetic or comparisons on.
SECTION_FIELDS: dict[str, dict[str, Any]] = {
    "driver": {"cuda_driver": int | None, "present": bool | None, "version": str | None},
    "shm": {"total_bytes": int, "free_bytes": int},
    "disk": {"total_bytes": int, "free_bytes": int},
    "limits": dict.fromkeys(("memlock_soft", "memlock_hard", "nofile_soft", "nofile_hard"), int | None),
}


_NAMES = {int: ("an integer", "integers"), float: ("a number", "numbers"), str: ("a string", "strings")}
_NAMES |= {bool: ("true/false", "true/false"), type(None): ("null", "nulls")}


def _describe(hint: Any, plural: bool = False) -> str:
    if hint is Any:
        return "anything"
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a, plural) for a in args)
    if origin is list:
        return ("lists" if plural else "a list") + (f" of {_describe(args[0], True)}" if args else "")
    if origin is dict:
        return ("objects" if plural else "an object") + (f" of {_describe(args[1], True)}" if args else "")
    names = _NAMES.get(hint)
    return names[plural] if names else getattr(hint, "__name__", str(hint))


def _fits(value: Any, hint: Any) -> bool:
    if hint is Any:
        return True
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if origin is list:
        return isinstance(value, list) and (not args or all(_fits(v, args[0]) for v in value))
    if origin is dict:
        return isinstance(value, dict) and (not args or all(_fits(v, args[1]) for v in value.values()))
    if hint is type(None):
        return value is None
    if hint in (int, float):
        return isinstance(value, (int, float) if hint is float else int) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True


def check_type(value: Any, hint: Any, where: str) -> None:
    """TypeError naming ``where`` when ``value`` does not have the type ``hint`` describes."""
    if not _fits(value, hint):
        raise TypeError(f"{where} = {repr(value)[:40]} must be {_describe(hint)}")


def check_sections(data: dict[str, Any]) -> None:
    for section, keys in SECTION_FIELDS.items():
        values = data.get(section)
        if not isinstance(values, dict):
            continue
        for key, hint in keys.items():
            if key in values:
                check_type(values[key], hint, f"{section}.{key}")
