"""Collectors of the deployment: doctor + host snapshot, plan, spec/lock/rendered files, state, log, profile.

Each takes the BundleContext and returns {archive path: content} (str, bytes, or JSON data), or raises
Absent. Contents are raw here: the builder redacts them.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from tqdeploy.bundle.context import STATE_DIR, Absent, BundleContext
from tqdeploy.filenames import SPEC_FILE_NAME

LOG_TAIL_BYTES = 2 * 1024 * 1024  # the last 2 MiB of each server log; --logs-since narrows it further
RENDERED_MAX_BYTES = 512 * 1024


def collect_doctor(ctx: BundleContext) -> dict[str, Any]:
    """The doctor's JSON and the raw snapshot it judged, so `doctor --snapshot BUNDLE` replays it."""
    from tqdeploy.doctor import run_doctor
    from tqdeploy.pins import DEFAULT_VLLM_VERSION

    with tempfile.TemporaryDirectory(prefix="tqdeploy-bundle-") as tmp:
        snap_path = Path(tmp) / "snapshot.json"
        result = run_doctor(snapshot_out=snap_path, vllm_version=DEFAULT_VLLM_VERSION, offline=True)
        snapshot = json.loads(snap_path.read_text(encoding="utf-8"))
    ctx.scratch["snapshot"] = snapshot
    return {"doctor/doctor.json": result.to_dict(), "host/snapshot.json": snapshot}


def collect_spec(ctx: BundleContext) -> dict[str, Any]:
    """tqdeploy.toml, the lock, and every rendered file the lock names (text only, bounded size)."""
    build_dir = ctx.need_build_dir()
    names = [SPEC_FILE_NAME, "tqdeploy.lock.json"]
    try:
        lock = json.loads((build_dir / "tqdeploy.lock.json").read_text(encoding="utf-8"))
        names += sorted(lock.get("files", {})) if isinstance(lock, dict) else []
    except (OSError, ValueError):
        pass
    out: dict[str, Any] = {}
    for name in dict.fromkeys(names):
        path = build_dir / name
        if path.is_file() and not path.is_symlink() and path.resolve().is_relative_to(build_dir.resolve()):
            out[f"build/{name}"] = path.read_bytes()[:RENDERED_MAX_BYTES]
    if not out:
        raise Absent(f"{build_dir} has no tqdeploy.toml or lock")
    return out


def collect_plan(ctx: BundleContext) -> dict[str, Any]:
    """The KV plan for the deployment's spec on the host the snapshot describes (GPU hosts only)."""
    from tqdeploy.model import load_model_facts
    from tqdeploy.plan import make_plan
    from tqdeploy.plan.host import from_snapshot
    from tqdeploy.snapshot import HostSnapshot
    from tqdeploy.spec import load_spec

    build_dir = ctx.need_build_dir()
    if not (build_dir / SPEC_FILE_NAME).is_file():
        raise Absent("no tqdeploy.toml in the build directory")
    spec = load_spec(build_dir / SPEC_FILE_NAME, check_vllm_flags=False)
    snapshot = HostSnapshot.from_dict(ctx.scratch.get("snapshot") or {})
    if not any(g.memory_total for g in snapshot.gpus):
        raise Absent("the host snapshot lists no GPU to plan for")
    model_path = (build_dir / str(spec["model"].get("path", ""))).resolve()
    if not (model_path / "config.json").is_file():
        raise Absent(f"the spec's model ({spec['model'].get('path')}) is not on this host")
    host = from_snapshot(snapshot, "the bundle's snapshot")
    vllm = spec["vllm"]
    plan = make_plan(
        load_model_facts(str(model_path)),
        gpu_memory_bytes=host.memory_bytes,
        num_gpus=host.count,
        max_model_len=int(vllm["max_model_len"]),
        gpu_memory_utilization=vllm.get("gpu_memory_utilization"),
        vllm_version=spec.vllm_version,
        compute_capability=host.compute_capability,
        gpu_name=host.name,
    )
    return {"plan/plan.json": plan.to_dict()}


def collect_state(ctx: BundleContext) -> dict[str, Any]:
    """The `up` state as written (api_key_file is a path; the key itself seeds the redactor, never the bundle)."""
    return {"runtime/state.json": ctx.need_state()}


def collect_logs(ctx: BundleContext) -> dict[str, Any]:
    """The stamped server logs: the last LOG_TAIL_BYTES, and only lines since --logs-since when given."""
    from tqdeploy.runtime.logstamp import split

    logs_dir = ctx.need_build_dir() / STATE_DIR / "logs"
    state_log = (ctx.state or {}).get("log_path")
    paths = sorted(logs_dir.glob("*.log")) if logs_dir.is_dir() else []
    if state_log and Path(state_log).is_file() and Path(state_log) not in paths:
        paths.append(Path(state_log))
    if not paths:
        raise Absent(f"no logs in {logs_dir}")
    out: dict[str, Any] = {}
    for path in paths:
        size = path.stat().st_size
        with path.open("rb") as fh:
            fh.seek(max(0, size - LOG_TAIL_BYTES))
            raw = fh.read()
        text = raw.decode("utf-8", errors="replace")
        if size > LOG_TAIL_BYTES:  # say so in the file itself, where a reader of the log will see it
            omitted = size - len(raw) + len(text.split("\n", 1)[0]) + 1
            text = f"[tqdeploy bundle: the first {omitted} bytes of {path.name} omitted]\n" + text.split("\n", 1)[-1]
        if ctx.logs_since_s is not None:
            text = _since(text, ctx.now - ctx.logs_since_s, split)
        out[f"logs/{path.name}"] = text
    return out


def _since(text: str, cutoff: float, split) -> str:
    """Stamped lines at or after cutoff; an unstamped line goes with the stamped line before it. A log with
    no stamp at all (a raw vLLM log) has no times to cut by: its tail is kept whole."""
    kept, keep, stamped = [], False, False
    for line in text.splitlines(keepends=True):
        when, _ = split(line)
        if when is not None:
            keep, stamped = when >= cutoff, True
        if keep:
            kept.append(line)
    return "".join(kept) if stamped else text


def collect_profile(ctx: BundleContext) -> dict[str, Any]:
    """The newest profile.json under the build dir (written by `tqdeploy profile`)."""
    build_dir = ctx.need_build_dir()
    found = [p for p in build_dir.rglob("profile.json") if p.is_file() and not p.is_symlink()]
    if not found:
        raise Absent(f"no profile.json under {build_dir}")
    newest = max(found, key=lambda p: (p.stat().st_mtime, str(p)))
    return {"profile/profile.json": newest.read_bytes()}
