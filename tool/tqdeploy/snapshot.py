"""HostSnapshot: everything the probes read from a host, as plain data with a JSON round trip.

Only probes (tqdeploy.probe) touch the machine. Checks, the planner and the linter read a
snapshot, so a snapshot recorded on a user's host (``doctor --snapshot-out``) replays the same
verdicts anywhere (``--snapshot FILE``). Sections are plain dicts/lists so that a snapshot from an
older or newer tqdeploy still loads; a section that a probe could not read stays empty and the
reason is in ``probe_errors``.
"""

from __future__ import annotations

import json
import math
from dataclasses import Field, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, get_type_hints

from tqdeploy.errors import TQError
from tqdeploy.fsutil import atomic_write_text
from tqdeploy.jsonin import loads
from tqdeploy.safeio import FileRefused, read_bytes
from tqdeploy.snapshot_types import check_sections, check_type

SCHEMA = "tqdeploy.snapshot/1"
SNAPSHOT_LIMIT = 16 << 20  # a recorded 8-GPU host is ~200 KiB
UNLIMITED = (-1,)  # rlimits: RLIM_INFINITY is recorded as -1 (probe/system.py)
STRING_LIMIT = 16 << 10  # characters of one recorded string: names, paths, versions, one-line errors
NUMBER_LIMIT = 2**63 - 1  # bytes, counts and ids all fit in 64 bits (NVML and sysfs report them so)


@dataclass
class GPU:
    index: int
    name: str = ""
    uuid: str = ""
    memory_total: int | None = None  # bytes
    memory_used: int | None = None  # bytes
    compute_capability: list[int] | None = None  # [major, minor]
    pci_bus_id: str = ""  # NVML's form, e.g. "00000000:00:06.0"
    # {"gen_cur", "gen_max", "gen_gpu_max", "width_cur", "width_max"}; None where NVML had no answer
    pcie: dict[str, int | None] = field(default_factory=dict)
    ecc_mode: list[int] | None = None  # [current, pending], 1 = enabled
    retired_pages_pending: bool | None = None  # None: not supported (e.g. Hopper uses row remapping)
    remapped_rows: dict[str, int] | None = None  # {"correctable", "uncorrectable", "pending", "failure"}
    persistence: bool | None = None
    mig_mode: list[int] | None = None  # [current, pending], 1 = enabled
    processes: list[dict[str, Any]] = field(default_factory=list)  # [{"pid", "used_memory"}]
    nvlinks: list[dict[str, Any]] = field(default_factory=list)  # [{"link", "active", "version", "remote"}]
    nvlink_error: str = ""  # why NVLink could not be read (e.g. NotSupported on a one-GPU VM)
    field_errors: dict[str, str] = field(default_factory=dict)  # NVML query -> error text


@dataclass
class HostSnapshot:
    schema: str = SCHEMA
    recorded_at: str = ""  # ISO 8601 UTC
    tool_version: str = ""
    gpus: list[GPU] = field(default_factory=list)
    # {"present": bool, "version": str, "cuda_driver": int (e.g. 13000), "nvml_version": str}
    driver: dict[str, Any] = field(default_factory=dict)
    # one entry per GPU pair: {"a", "b", "level" (NV#|PIX|PXB|PHB|NODE|SYS), "p2p_read", "p2p_nvlink"}
    topology: list[dict[str, Any]] = field(default_factory=list)
    # PCI sysfs per bus id (sysfs form "0000:00:06.0"): link speed/width, AER counters, l1_aspm
    pci: dict[str, dict[str, Any]] = field(default_factory=dict)
    aspm_policy: str | None = None  # the bracketed value of /sys/module/pcie_aspm/parameters/policy
    shm: dict[str, Any] = field(default_factory=dict)  # {"path", "total_bytes", "free_bytes"}
    container: dict[str, Any] = field(default_factory=dict)  # {"in_container", "markers"}
    kernel: dict[str, Any] = field(default_factory=dict)  # {"release", "wsl"}
    limits: dict[str, Any] = field(default_factory=dict)  # memlock/nofile soft+hard (-1 unlimited), infiniband
    docker: dict[str, Any] = field(default_factory=dict)  # engine, runtimes, CDI specs, nvidia-ctk
    cuda_libs: dict[str, Any] = field(default_factory=dict)  # {"wheels": {...}, "ldconfig": {...}}
    disk: dict[str, Any] = field(default_factory=dict)  # {"path", "free_bytes", "total_bytes"}
    env: dict[str, Any] = field(default_factory=dict)  # {"hf_token_present", "hf_endpoint", "hf_home"}
    mirror: dict[str, Any] = field(default_factory=dict)  # {"endpoint", "reachable", "status", "error", "seconds"}
    probe_errors: dict[str, str] = field(default_factory=dict)  # probe name -> one-line error
    probe_seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostSnapshot:
        known = {f.name: f for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        hints = _hints(cls)
        for name, value in kwargs.items():
            _check_shape(name, value, known[name])
            if not isinstance(value, (dict, list)):  # schema, recorded_at, tool_version, aspm_policy
                check_type(value, hints[name], name)
            _check_values(value, name, allowed=UNLIMITED if name == "limits" else ())

        check_sections(kwargs)
        kwargs["gpus"] = [_build(GPU, g) for g in data.get("gpus", [])]
        return cls(**kwargs)

    def save(self, path: str | Path) -> None:
        atomic_write_text(Path(path), json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> HostSnapshot:
        p = Path(path)

        if not p.exists():
            raise TQError(
                f"snapshot file {p} does not exist", "record one with `tqdeploy doctor --snapshot-out FILE`"
            ) from None
        fix = "pass a file written by `tqdeploy doctor --snapshot-out`"
        try:
            # The path is the user's own (--snapshot), so a link is followed; a FIFO, device or folder is not.
            raw = read_bytes(p, SNAPSHOT_LIMIT, "snapshot file", follow_symlinks=True)
        except FileRefused as exc:
            why = exc.message.removeprefix(f"snapshot file {p} ")
            raise TQError(f"snapshot file {p} is not a readable text file ({why})", fix) from None
        # Depth-bounded: a file nested 100,000 deep is one line. NaN passes here so from_dict names its field.
        data = loads(raw, f"snapshot file {p}", fix, constants=True)
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise TQError(f"snapshot file {p} is not a {SCHEMA} document", fix)
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError, AttributeError, RecursionError) as exc:
            raise TQError(
                f"snapshot file {p} has a malformed section ({str(exc)[:200]})",
                "record it again with `tqdeploy doctor --snapshot-out FILE`",
            ) from exc


def _check_shape(name: str, value: Any, f: Field[Any]) -> None:
    """Sections must keep their container type, so a hand-edited snapshot fails on load, not inside a check."""
    default = f.default_factory() if callable(f.default_factory) else None
    if isinstance(default, (dict, list)) and not isinstance(value, type(default)):
        raise TypeError(f"section {name!r} must be a JSON {'object' if isinstance(default, dict) else 'array'}")


def _check_values(value: Any, where: str, allowed: tuple[int, ...] = ()) -> None:
    """Every number a probe records is a size, count, time or id: finite, not negative (-1 for "unlimited"
    in limits only) and within 64 bits. A hand-edited -150000000000 once gave "TQ103 ok ... -140.4 GiB", and a
    4,000-digit memory_total an OverflowError in plan and doctor. Every string (and key) a probe records is a
    name, path, version or one-line error: a 10 MiB GPU name once took doctor 65 s and 1.3 GB. Refused on load."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_values(key, f"{where} (a key)", allowed)
            _check_values(item, f"{where}.{str(key)[:40]}", allowed)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_values(item, f"{where}[{i}]", allowed)
    elif isinstance(value, str):
        if len(value) > STRING_LIMIT:
            raise ValueError(f"{where} is a string of {len(value)} characters, more than the {STRING_LIMIT} allowed")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, int) and abs(value) > NUMBER_LIMIT:
            raise ValueError(f"{where} = {str(value)[:20]}... ({len(str(value))} digits) is past 64 bits")
        if not math.isfinite(value) or (value < 0 and value not in allowed):
            raise ValueError(f"{where} = {repr(value)[:40]} is not a finite number >= 0")


def _build(cls: type[GPU], data: Any) -> GPU:  # Any: one entry of a snapshot file's JSON
    if not isinstance(data, dict):
        raise TypeError("each entry of 'gpus' must be a JSON object")
    known = {f.name: f for f in fields(cls)}
    hints = _hints(cls)
    kwargs = {k: v for k, v in data.items() if k in known}
    for name, value in kwargs.items():
        _check_shape(f"gpus[].{name}", value, known[name])
        check_type(value, hints[name], f"gpus[{data.get('index', '?')}].{name}")
    return cls(**kwargs)


def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)
