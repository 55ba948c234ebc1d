"""state.json as a typed record: read once, validated field by field (runtime/statefields.py), passed along.

`statefields.record(data, build_dir)` validates a parsed state.json into one (a bad field is BadField naming it;
a copied state's paths are left out), so a hand-edited or hostile state is refused; `state.read_record` is the one
reader. This module imports nothing of runtime/ but its own JSON helpers: the interface (base.py) and every step
can name the type without reaching the validation. A field absent from the file stays absent: `to_json()` gives
back what `read_state` returns, and the attribute reads None.

The shared fields are the same for every runtime. What one runtime records of its own (the process runtime: the
vLLM python; docker: the container id) is its section, state["backend"], validated by that runtime's own typed,
frozen BackendState (its `from_json` refuses a bad type or a key it does not know): nothing here names a runtime.
Top-level fields this version does not know are not silently dropped: the record lists them in `unknown` and
`status` shows them; they are not refused, so a state written by a newer tqdeploy can still be stopped by `down`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Protocol


class BackendState(Protocol):
    """A runtime's own section of state.json (runtime/base.py Runtime.state_type)."""

    # Fields an older tqdeploy wrote at the top of state.json that now live in this section: read there too.
    legacy_fields: ClassVar[frozenset[str]]

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> BackendState: ...

    def to_json(self) -> dict[str, Any]: ...


@dataclass
class StateRecord:
    schema: str | None = None
    runtime: str | None = None
    pid: int | None = None
    pgid: int | None = None
    supervisor_pid: int | None = None
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
    gpu_baseline: list[dict[str, Any]] | None = None
    marker: str | None = None
    env_overrides: dict[str, str] | None = None  # the caller's TQ_* variables serve.sh read (runtime/callerenv.py)
    backend: BackendState | None = None  # the runtime's own section, validated by it (None: the file has none)
    present: frozenset[str] = field(default=frozenset(), repr=False)  # the fields the file held
    unknown: tuple[str, ...] = field(default=(), repr=False)  # top-level fields this version does not know

    # Not fields of the file: what the record knows about the file.
    BOOKKEEPING: ClassVar[frozenset[str]] = frozenset({"present", "unknown"})

    @classmethod
    def from_validated(
        cls, values: dict[str, Any], backend: BackendState | None = None, unknown: tuple[str, ...] = ()
    ) -> StateRecord:
        """From what statefields.validated returned (only checked values: never call it with raw JSON)."""
        known = cls.shared_fields()
        kept = {k: v for k, v in values.items() if k in known}
        present = frozenset(kept) | ({"backend"} if backend is not None else frozenset())
        return cls(**kept, backend=backend, present=present, unknown=unknown)

    @classmethod
    def shared_fields(cls) -> frozenset[str]:
        """The fields every runtime's state holds (statefields.CHECKS validates each)."""
        return frozenset(f.name for f in fields(cls)) - cls.BOOKKEEPING - {"backend"}

    @classmethod
    def empty(cls) -> StateRecord:
        return cls()

    @property
    def is_empty(self) -> bool:
        return not self.present

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name in self.present and f.name != "backend"}
        if self.backend is not None:
            out["backend"] = self.backend.to_json()
        return out

    def pids(self) -> dict[str, int | None]:
        """The pid fields as recorded (runtime/marker.py says which of them are trusted)."""
        return {"pid": self.pid, "supervisor_pid": self.supervisor_pid, "pgid": self.pgid}
