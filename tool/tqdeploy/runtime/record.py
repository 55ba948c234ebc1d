"""state.json as a typed record: read once, validated field by field (runtime/statefields.py), passed along.

`statefields.record(data, build_dir)` validates a parsed state.json into one (a bad field is BadField naming it;
fields this version does not know are dropped; a copied state's paths are left out), so a hand-edited or hostile
state is refused exactly as before; `state.read_record` is the one reader. This module imports nothing of
runtime/: the interface (base.py) and every step can name the type without reaching the validation. A field
absent from the file stays absent: `to_json()` gives back what `read_state` returns, and the attribute reads None.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class StateRecord:
    schema: str | None = None
    runtime: str | None = None
    pid: int | None = None
    pgid: int | None = None
    supervisor_pid: int | None = None
    container_id: str | None = None
    host: str | None = None
    port: int | None = None
    base_url: str | None = None
    served_model_name: str | None = None
    spec_sha256: str | None = None
    log_path: str | None = None
    started_at: float | None = None
    ready_at: float | None = None
    stopped_at: float | None = None
    exited_at: float | None = None
    phase: str | None = None
    ready: bool | None = None
    api_key_file: str | None = None
    restarts: int | None = None
    last_error: dict[str, Any] | None = None
    answer_check: dict[str, Any] | None = None  # `tqdeploy check` after ready (answers/result.py summary)
    exit_code: int | None = None
    python: str | None = None
    gpu_baseline: list[dict[str, Any]] | None = None
    marker: str | None = None
    env_overrides: dict[str, str] | None = None  # the caller's TQ_* variables serve.sh read (runtime/callerenv.py)
    present: frozenset[str] = field(default=frozenset(), repr=False)  # the fields the file held

    @classmethod
    def from_validated(cls, values: dict[str, Any]) -> StateRecord:
        """From what statefields.validated returned (only checked values: never call it with raw JSON)."""
        known = {f.name for f in fields(cls)} - {"present"}
        kept = {k: v for k, v in values.items() if k in known}
        return cls(**kept, present=frozenset(kept))

    @classmethod
    def empty(cls) -> StateRecord:
        return cls()

    @property
    def is_empty(self) -> bool:
        return not self.present

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in self.present}

    def pids(self) -> dict[str, int | None]:
        """The pid fields as recorded (runtime/marker.py says which of them are trusted)."""
        return {"pid": self.pid, "supervisor_pid": self.supervisor_pid, "pgid": self.pgid}
