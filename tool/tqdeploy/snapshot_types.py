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

_STR = str | None
_STRS = list[str]
# The keys of the dict sections that checks and the planner read, with the types the probes write them with
# (probe/system.py, hostenv.py, docker_engine.py, cudalibs.py, pci.py, topology.py). A section a check reads
# with .get() and then iterates or compares (docker.runtimes, cuda_libs.ldconfig...) once crashed that check
# when hand-edited to another type; now the load refuses the snapshot and names the field.
SECTION_FIELDS: dict[str, dict[str, Any]] = {
    "driver": {"cuda_driver": int | None, "present": bool | None, "version": _STR, "nvml_version": _STR, "error": _STR},
    "shm": {"total_bytes": int, "free_bytes": int, "path": _STR},
    "disk": {"total_bytes": int, "free_bytes": int, "path": _STR, "measured_at": _STR},
    "limits": dict.fromkeys(("memlock_soft", "memlock_hard", "nofile_soft", "nofile_hard"), int | None)
    | {"infiniband": _STRS | None},
    "container": {"in_container": bool, "markers": _STRS | None},
    "kernel": {"release": _STR, "wsl": bool | None},
    "docker": {
        "sdk": _STR,
        "reachable": bool | None,
        "error": _STR,
        "server_version": _STR,
        "runtimes": _STRS | None,
        "default_runtime": _STR,
        "cdi_specs": dict[str, _STRS] | None,
        "nvidia_ctk": _STR,
        "docker_cli": _STR,
        "cdi_spec_dirs_engine": _STRS | None,
    },
    "env": {"hf_token_present": bool | None, "hf_endpoint": _STR, "hf_cache": _STR, "hf_hub_offline": _STR},
    "mirror": {
        "endpoint": _STR,
        "proxy": _STR,
        "reachable": bool | None,
        "status": int | None,
        "error": _STR,
        "seconds": float | None,
    },
    "cuda_libs": {"wheels": dict[str, str] | None, "python_env": _STR, "ldconfig": dict[str, _STRS] | None},
}
# Sections that hold one such object per entry: pci (per bus id) and topology (per GPU pair).
ENTRY_FIELDS: dict[str, dict[str, Any]] = {
    "pci": {
        "present": bool | None,
        "current_link_speed": _STR,
        "max_link_speed": _STR,
        "current_link_width": int | str | None,
        "max_link_width": int | str | None,
        "current_gen": int | None,
        "max_gen": int | None,
        "aer": dict[str, dict[str, int]] | None,
        "l1_aspm": bool | None,
    },
    "topology": {"a": int, "b": int, "level": _STR, "p2p_read": _STR, "p2p_nvlink": _STR},
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


def _check_keys(values: dict[str, Any], keys: dict[str, Any], where: str) -> None:
    for key, hint in keys.items():
        if key in values:
            check_type(values[key], hint, f"{where}.{key}")


# Sections whose every value has one type: a probe's error is a one-line string, its time a number.
WHOLE_SECTIONS: dict[str, Any] = {"probe_errors": str, "probe_seconds": float}


def check_sections(data: dict[str, Any]) -> None:
    for section, hint in WHOLE_SECTIONS.items():
        values = data.get(section)
        for key, value in values.items() if isinstance(values, dict) else ():
            check_type(value, hint, f"{section}.{str(key)[:40]}")
    for section, keys in SECTION_FIELDS.items():
        values = data.get(section)
        if isinstance(values, dict):
            _check_keys(values, keys, section)
    for section, keys in ENTRY_FIELDS.items():
        entries = data.get(section)
        items = entries.items() if isinstance(entries, dict) else enumerate(entries or [])
        for name, entry in items:
            where = f"{section}[{str(name)[:40]!r}]"
            if not isinstance(entry, dict):
                raise TypeError(f"{where} must be an object")
            _check_keys(entry, keys, where)
