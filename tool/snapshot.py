"""HostSnapshot: everything the probes read from a host, as plain data with a JSON round trip.

Only probes (tqdeploy.probe) touch the machine. Checks, the planner and the linter read a
snapshot, so a snapshot recorded on a user's host (``doctor --snapshot-out``) replays the same
verdicts anywhere (``--snapshot FILE``).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

SCHEMA = "tqdeploy.snapshot/1"


@dataclass
class GPU:
    index: int
    name: str = ""
    uuid: str = ""
    memory_total: int | None = None  # bytes
    memory_used: int | None = None  # bytes
    compute_capability: list[int] | None = None  # [major, minor]


@dataclass
class HostSnapshot:
    schema: str = SCHEMA
    gpus: list[GPU] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HostSnapshot":
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["gpus"] = [_build(GPU, g) for g in data.get("gpus", [])]
        return cls(**kwargs)

    def save(self, path: str | Path) -> None:
        from tqdeploy.fsutil import atomic_write_text

        atomic_write_text(Path(path), json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "HostSnapshot":
        from tqdeploy.errors import TQError

        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TQError(f"snapshot file {p} does not exist", "record one with `tqdeploy doctor --snapshot-out FILE`")
        except json.JSONDecodeError as exc:
            raise TQError(f"snapshot file {p} is not JSON ({exc.msg} at line {exc.lineno})",
                          "pass a file written by `tqdeploy doctor --snapshot-out`")
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise TQError(f"snapshot file {p} is not a {SCHEMA} document",
                          "pass a file written by `tqdeploy doctor --snapshot-out`")
        return cls.from_dict(data)


def _build(cls, data: dict[str, Any]):
    known = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in known})
