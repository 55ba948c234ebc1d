"""What each field of state.json may hold: the state is read into validated values, never trusted as it lies.

state.json is written by `up`, `down` and the supervisor, but it sits in a folder anyone with access can
edit, copy or replace. Every field a command reads is checked here for its type, range and finiteness (a
pid of "x", a port of 99999, a `started_at` of 1e300 that once printed a 300-digit uptime), and a bad value
is one line naming the field and the value (truncated). Fields this version does not know are never handed to a
caller: the record lists their names (runtime/record.py says why they are reported, not refused). The runtime's
own section, state["backend"], is validated by that runtime's BackendState (its from_json, with the checkers
here); fields an older tqdeploy wrote flat (python, container_id) are read into the section they belong to.
"""

from __future__ import annotations

import ipaddress
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Self
from urllib.parse import urlsplit

from tqdeploy.runtime import registry
from tqdeploy.runtime.folderid import deployment_marker
from tqdeploy.runtime.phases import ORDER
from tqdeploy.runtime.record import BackendState, StateRecord
from tqdeploy.safeio import is_within

PHASES = frozenset(ORDER) | {"starting", "stopped", "failed"}
PID_MAX_FALLBACK = 4_194_304  # the kernel's PID_MAX_LIMIT on 64-bit (include/linux/threads.h)
FUTURE_SLACK_S = 86_400.0  # a clock a day ahead is a wrong clock; more is a hand-edited value
MAX_TEXT = 4096
MAX_RESTARTS = 1_000_000
_HOSTNAME = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_.-]{0,252})\Z")
_HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
_CREDENTIALS = re.compile(r"(//)[^/@\s]*@")  # scheme://user:password@host: never echoed


Check = Callable[[Any, dict[str, Any]], Any]  # a field's checker: (value, context) -> the value, or BadField


class BadField(ValueError):
    """One field's value is not what tqdeploy writes there; the message says what it must be."""


def shown(value: Any, limit: int = 60) -> str:
    """The bad value as the error shows it: repr, a URL's user:password replaced, cut to ``limit`` characters."""
    text = _CREDENTIALS.sub(r"\1[credentials]@", repr(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def pid_max() -> int:
    try:
        with open("/proc/sys/kernel/pid_max", "rb") as f:
            return int(f.read(32).strip())
    except (OSError, ValueError):
        return PID_MAX_FALLBACK


def _int(value: Any, low: int, high: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadField(f"must be {what}")
    return value


def _pid(value: Any, ctx: dict[str, Any]) -> int:
    top = pid_max() - 1  # the kernel hands out pids below pid_max
    return _int(value, 1, top, f"a process id 1..{top}")


def _port(value: Any, ctx: dict[str, Any]) -> int:
    return _int(value, 1, 65535, "a port 1-65535")


def _restarts(value: Any, ctx: dict[str, Any]) -> int:
    return _int(value, 0, MAX_RESTARTS, f"a count 0..{MAX_RESTARTS}")


def _exit_code(value: Any, ctx: dict[str, Any]) -> int:
    return _int(value, -255, 255, "an exit status -255..255")


def _bool(value: Any, ctx: dict[str, Any]) -> bool:
    if not isinstance(value, bool):
        raise BadField("must be true or false")
    return value


def _time(value: Any, ctx: dict[str, Any]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadField("must be a time in seconds since 1970")
    if value < 0 or value > time.time() + FUTURE_SLACK_S:
        raise BadField("must be a time in seconds since 1970, not in the future")
    return float(value)


def text(value: Any, limit: int = MAX_TEXT) -> str:
    """A string of printable characters (no newline, NUL or other control character), at most ``limit``."""
    if not isinstance(value, str) or not value or len(value) > limit:
        raise BadField(f"must be a string of 1..{limit} characters")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value):
        raise BadField("must hold no control characters")
    return value


def _text(value: Any, ctx: dict[str, Any]) -> str:
    return text(value)


def path_text(value: Any, ctx: dict[str, Any] | None = None) -> str:
    """A path the user chose (the interpreter, a key file): any character a file name may hold but NUL, which
    includes a newline or `$(...)`: such a path is quoted or passed as an argument, never parsed."""
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT or "\0" in value:
        raise BadField(f"must be a path of 1..{MAX_TEXT} characters")
    return value


def _choice(options: frozenset[str]) -> Callable[[Any, dict[str, Any]], str]:
    def check(value: Any, ctx: dict[str, Any]) -> str:
        if not isinstance(value, str) or value not in options:
            raise BadField("must be one of " + ", ".join(sorted(options)))
        return str(value)

    return check


def _runtime(value: Any, ctx: dict[str, Any]) -> str:
    """A name in runtime/registry.py (read when checked: a runtime registered later is one too)."""
    return _choice(frozenset(registry.names()))(value, ctx)


def matching(pattern: re.Pattern[str], what: str) -> Callable[[Any, dict[str, Any]], str]:
    def check(value: Any, ctx: dict[str, Any]) -> str:
        if not isinstance(value, str) or not pattern.match(value):
            raise BadField(f"must be {what}")
        return value

    return check


def host(value: Any, ctx: dict[str, Any] | None = None) -> str:
    """An IP address or a DNS name, as server.host holds it."""
    if isinstance(value, str) and value in ("", "::", "0.0.0.0"):
        return value
    name = text(value, 253)
    try:
        ipaddress.ip_address(name)
    except ValueError:
        if not _HOSTNAME.match(name):
            raise BadField("must be an IP address or a host name") from None
    return name


def _local_names(bound: str) -> set[str]:
    """The names a client on this machine reaches a server bound to ``bound`` by."""
    if bound in ("", "0.0.0.0", "::"):
        return {"127.0.0.1", "::1", "localhost"}
    return {bound}


def _base_url(value: Any, ctx: dict[str, Any]) -> str:
    url = text(value)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not a number or out of range)
    except ValueError:
        raise BadField("must be an http(s) URL that parses") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadField("must be an http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        raise BadField("must carry no user or password")
    bound = ctx.get("host")
    if isinstance(bound, str) and parts.hostname not in _local_names(bound):
        raise BadField(f"must name the state's host {bound}")
    return url


def _inside_build(value: Any, ctx: dict[str, Any]) -> str:
    path = text(value)
    if not is_within(Path(path), ctx["build_dir"]):
        raise BadField(f"must be a path inside {ctx['build_dir']}")
    return path


def _last_error(value: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    """A finding as Finding.to_dict wrote it: status prints its id, title and remediation."""
    if not isinstance(value, dict):
        raise BadField("must be a finding (an object with id and title)")
    for key in ("id", "title"):
        text(value.get(key))
    fix = value.get("remediation")
    if fix not in (None, "") and not isinstance(fix, str):
        raise BadField("remediation must be a string")
    return value


def _answer_check(value: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    """The answer check's summary after ready (answers/result.py CheckResult.summary): status shows it."""
    if not isinstance(value, dict):
        raise BadField("must be the answer check's summary (an object)")
    _choice(frozenset({"pass", "fail"}))(value.get("status"), ctx)
    for key in ("checked_at", "seconds", "perplexity"):
        number = value.get(key)
        if number is not None and (
            isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number) or number < 0
        ):
            raise BadField(f"{key} must be a number >= 0")
    for key in ("kv_cache_dtype", "reference"):
        if value.get(key) is not None:
            text(value[key])
    findings = value.get("findings")
    if not isinstance(findings, list) or len(findings) > 64:
        raise BadField("findings must be a list of at most 64 findings")
    for f in findings:
        _last_error(f, ctx)
    return value


def _gpu_baseline(value: Any, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    """GPU memory before `up`, as runtime.gpu.gpu_memory() returned it; `down` compares against it."""
    if not isinstance(value, list) or len(value) > 1024:
        raise BadField("must be a list of GPUs")
    for gpu in value:
        if not isinstance(gpu, dict):
            raise BadField("must be a list of GPU objects")
        _int(gpu.get("index"), 0, 1023, "a list of GPUs with index 0..1023")
        _int(gpu.get("used_mib"), 0, 1 << 40, "a list of GPUs with used_mib >= 0")
    return value


def _env_overrides(value: Any, ctx: dict[str, Any]) -> dict[str, str]:
    """The caller's TQ_* variables `up` passed on (runtime/callerenv.py): status prints them."""
    if not isinstance(value, dict) or len(value) > 16:
        raise BadField("must be an object of at most 16 TQ_* variables")
    for name, val in value.items():
        if not re.fullmatch(r"TQ_[A-Z_]{1,40}", str(name)) or not isinstance(val, str):
            raise BadField("must map TQ_* names to strings")
        if len(val) > 400 or not val.isprintable():
            raise BadField("must hold printable values of at most 400 characters")
    return value


CHECKS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "schema": _text,
    "runtime": _runtime,
    "pid": _pid,
    "pgid": _pid,
    "supervisor_pid": _pid,
    "host": host,
    "port": _port,
    "base_url": _base_url,
    "served_model_name": _text,
    "spec_sha256": matching(_HEX64, "a sha256 (64 hex digits)"),
    "log_path": _inside_build,
    "started_at": _time,
    "ready_at": _time,
    "stopped_at": _time,
    "exited_at": _time,
    "phase": _choice(PHASES),
    "ready": _bool,
    "api_key_file": _text,
    "restarts": _restarts,
    "last_error": _last_error,
    "answer_check": _answer_check,
    "exit_code": _exit_code,
    "gpu_baseline": _gpu_baseline,
    "marker": _text,
    "env_overrides": _env_overrides,
}


def _foreign(data: dict[str, Any], build_dir: Path) -> bool:
    """The state records another folder's marker: a `cp -a` copy of a build. Its own fields are still
    checked, its paths left out, and `down`/`status` say what was found (TQ425) instead of calling it corrupt."""
    recorded = data.get("marker")
    return isinstance(recorded, str) and recorded != deployment_marker(build_dir)


def validated(data: dict[str, Any], build_dir: Path) -> dict[str, Any]:
    """Only known fields, each checked (null stays None, an absent field stays absent); BadField names the
    first bad one."""
    ctx = {"build_dir": Path(build_dir).resolve(), "host": data.get("host")}
    foreign = _foreign(data, build_dir)
    out: dict[str, Any] = {}
    for name, check in CHECKS.items():
        if name not in data or (foreign and check is _inside_build):
            continue  # a copied state's paths name the folder it was copied from: never this one's to use
        value = data[name]
        if value is None:
            out[name] = None
            continue
        try:
            out[name] = check(value, ctx)
        except BadField as err:
            raise BadField(f"field {name} = {shown(value)} {err}") from None
    return out


def refuse_unknown(data: Mapping[str, object], known: frozenset[str]) -> None:
    """A runtime's section holds only what that runtime writes there: any other key is refused."""
    extra = sorted(str(k) for k in data if k not in known)
    if extra:
        holds = ", ".join(sorted(known)) or "nothing"
        raise BadField(f"{shown(extra[0], 40)} is not a field of this runtime's section (it holds {holds})")


def section_value(data: Mapping[str, object], key: str, check: Callable[[Any, dict[str, Any]], Any]) -> Any:
    """One value of a runtime's section, checked (None when absent or null); BadField names the key and value."""
    value = data.get(key)
    if value is None:
        return None
    try:
        return check(value, {})
    except BadField as err:
        raise BadField(f"{key} = {shown(value)} {err}") from None


@dataclass(frozen=True)
class SectionState:
    """A runtime's section of state.json as a frozen dataclass: each field checked by its checker in `checks`, any
    other key refused. A runtime subclasses it with its fields, their checkers and the legacy_fields it read flat."""

    legacy_fields: ClassVar[frozenset[str]] = frozenset()
    checks: ClassVar[Mapping[str, Check]] = {}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Self:
        refuse_unknown(data, frozenset(cls.checks))
        return cls(**{key: section_value(data, key, check) for key, check in cls.checks.items()})

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def backend_section(data: dict[str, Any], runtime: str | None) -> BackendState | None:
    """The runtime's own section, validated by its BackendState; None when the file has none. A state written
    before the section existed held its fields flat (legacy_fields): they are read into the section."""
    state_type = registry.runtime_class(runtime or registry.DEFAULT).state_type
    section = data.get("backend")
    if section is not None and not isinstance(section, dict):
        raise BadField(f"field backend = {shown(section)} must be an object (the runtime's own fields)")
    flat = {k: data[k] for k in state_type.legacy_fields if data.get(k) is not None}
    if section is None and not flat:
        return None
    merged = flat | (section or {})
    try:
        return state_type.from_json(merged)
    except BadField as err:
        raise BadField(f"field backend = {shown(merged)} of the {runtime or registry.DEFAULT} runtime: {err}") from None


def unknown_fields(data: dict[str, Any], backend_type: BackendState | None) -> tuple[str, ...]:
    """Top-level fields this version does not know and that hold something (an older version wrote
    `container_id: null` into every state: a null loses nothing), their names cut to 40 characters."""
    legacy = type(backend_type).legacy_fields if backend_type is not None else frozenset()
    skip = set(CHECKS) | {"backend"} | legacy
    return tuple(sorted(shown(k, 40) for k, v in data.items() if k not in skip and v is not None))[:16]


def record(data: dict[str, Any], build_dir: Path) -> StateRecord:
    """A parsed state.json as the typed record, every field validated (BadField on the first bad one)."""
    values = validated(data, build_dir)
    backend = backend_section(data, values.get("runtime"))
    return StateRecord.from_validated(values, backend, unknown_fields(data, backend))
