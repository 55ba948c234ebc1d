"""Collectors of the deployment: doctor + host snapshot, plan, spec/lock/rendered files, state, log, profile.

Each takes the BundleContext and the Inputs it declared (bundle/collector.py) and returns {archive path:
content} (str, bytes, or JSON data), or raises Absent. Contents are raw here: the builder redacts them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tqdeploy.buildfolder import LOCK_NAME, STATE_DIR, BuildFolder
from tqdeploy.bundle.collector import Collected, Files, Inputs
from tqdeploy.bundle.context import Absent, BundleContext, inside
from tqdeploy.bundle.products import JudgedHost
from tqdeploy.deployspec import load_spec
from tqdeploy.doctor import run_doctor
from tqdeploy.errors import TQError
from tqdeploy.filenames import SPEC_FILE_NAME
from tqdeploy.jsonin import loads
from tqdeploy.model import load_model_facts
from tqdeploy.pins import DEFAULT_VLLM_VERSION
from tqdeploy.plan import make_plan
from tqdeploy.plan.host import from_snapshot
from tqdeploy.runtime.logstamp import split
from tqdeploy.safeio import FileRefused, read_bytes

LOG_TAIL_BYTES = 2 * 1024 * 1024  # the last 2 MiB of each server log; --logs-since narrows it further
LOGS_TOTAL_BYTES = 4 * 1024 * 1024  # all logs together: bounds the redaction time (issue 19: <= 5 s)
RENDERED_MAX_BYTES = 512 * 1024
PROFILE_MAX_BYTES = 8 * 1024 * 1024
PROFILE_WALK_LIMIT = 20000  # files looked at while searching the build for profile.json


def collect_doctor(ctx: BundleContext, inputs: Inputs) -> Collected:
    """The doctor's JSON and the raw snapshot it judged, so `doctor --snapshot BUNDLE` replays it; the
    snapshot is this collector's product (JudgedHost), the plan's input."""
    result = run_doctor(vllm_version=DEFAULT_VLLM_VERSION, offline=True)
    assert result.host is not None  # a doctor that probes this host always has its snapshot
    files = {"doctor/doctor.json": result.to_dict(), "host/snapshot.json": result.host.to_dict()}
    return Collected(files, JudgedHost(result.host))


def _read_inside(ctx: BundleContext, path: Path, limit: int, tail: bool = False) -> bytes | None:
    """A file of the build: regular, inside it, not through a symlink, bounded; else recorded as skipped."""
    build_dir = ctx.need_build_dir()
    if os.path.islink(path):
        ctx.skip(path, "a symlink: not followed")
        return None
    try:
        return read_bytes(path, limit, "file", within=build_dir, tail=tail)
    except FileRefused as exc:
        ctx.skip(path, str(exc))
        return None


def collect_spec(ctx: BundleContext, inputs: Inputs) -> Files:
    """tqdeploy.toml, the lock, and every rendered file the lock names (regular files inside the build)."""
    build_dir = ctx.need_build_dir()
    names = [SPEC_FILE_NAME, LOCK_NAME]
    lock_raw = (
        _read_inside(ctx, build_dir / LOCK_NAME, RENDERED_MAX_BYTES)
        if (os.path.lexists(build_dir / LOCK_NAME))
        else None
    )
    try:  # depth-bounded: a lock nested 100,000 deep is no lock, not a failed collector
        lock = loads(lock_raw or b"{}", "the build's lock", "")
    except TQError:
        lock = {}
    listed = lock.get("files") if isinstance(lock, dict) else None
    names += sorted(str(n) for n in listed) if isinstance(listed, (dict, list)) else []
    out: dict[str, object] = {}
    for name in dict.fromkeys(names):
        path = build_dir / name
        if not os.path.lexists(path):
            continue
        data = lock_raw if name == LOCK_NAME else _read_inside(ctx, path, RENDERED_MAX_BYTES)
        if data is not None:
            out[f"build/{name}"] = data
    if not out:
        raise Absent(f"{build_dir} has no tqdeploy.toml or lock")
    return out


def collect_plan(ctx: BundleContext, inputs: Inputs) -> Files:
    """The KV plan for the deployment's spec on the host the doctor judged (GPU hosts only)."""
    build_dir = ctx.need_build_dir()
    if not (build_dir / SPEC_FILE_NAME).is_file():
        raise Absent("no tqdeploy.toml in the build directory")
    spec = load_spec(build_dir / SPEC_FILE_NAME)
    snapshot = inputs.need(JudgedHost).snapshot
    if not any(g.memory_total for g in snapshot.gpus):
        raise Absent("the host snapshot lists no GPU to plan for")
    model_path = (build_dir / str(spec.model.path or "")).resolve()
    if not (model_path / "config.json").is_file():
        raise Absent(f"the spec's model ({spec.model.path}) is not on this host")
    host = from_snapshot(snapshot, "the bundle's snapshot")
    vllm = spec.vllm
    if vllm.max_model_len is None:
        raise Absent("the spec sets no vllm.max_model_len to plan for")
    plan = make_plan(
        load_model_facts(str(model_path)),
        gpu_memory_bytes=host.memory_bytes,
        num_gpus=host.count,
        max_model_len=int(vllm.max_model_len),
        gpu_memory_utilization=vllm.gpu_memory_utilization,
        vllm_version=spec.vllm_version,
        compute_capability=host.compute_capability,
        gpu_name=host.name,
    )
    return {"plan/plan.json": plan.to_dict()}


def collect_state(ctx: BundleContext, inputs: Inputs) -> Files:
    """The `up` state as written (api_key_file is a path; the key itself seeds the redactor, never the bundle)."""
    return {"runtime/state.json": ctx.need_state()}


def _log_paths(ctx: BundleContext, build_dir: Path) -> list[Path]:
    """The logs under .tqdeploy/logs (newest first) and the state's log_path where it lies inside the build;
    symlinks, FIFOs, folders and paths outside the build are recorded as skipped, never opened."""
    logs_dir = BuildFolder(build_dir).logs
    paths: list[Path] = []
    for folder in (build_dir / STATE_DIR, logs_dir):
        if os.path.islink(folder):
            ctx.skip(folder, "a symlinked folder: not followed")
            return paths
    entries: list[tuple[float, str]] = []
    if logs_dir.is_dir():
        with os.scandir(logs_dir) as it:
            for entry in it:
                if not entry.name.endswith(".log"):
                    continue
                if entry.is_symlink():
                    ctx.skip(entry.path, "a symlink: not followed")
                elif not entry.is_file(follow_symlinks=False):
                    ctx.skip(entry.path, "not a regular file")
                else:
                    entries.append((entry.stat(follow_symlinks=False).st_mtime, entry.path))
    paths = [Path(p) for _, p in sorted(entries, key=lambda e: (-e[0], e[1]))]
    named = (ctx.state or {}).get("log_path")
    if named:
        path = inside(build_dir, named)
        if path is None:
            ctx.skip(str(named), "the state's log_path lies outside the build: not read")
        elif path not in paths and os.path.lexists(path):
            paths.append(path)
    return paths


def collect_logs(ctx: BundleContext, inputs: Inputs) -> Files:
    """The stamped server logs, newest first: the last LOG_TAIL_BYTES of each, LOGS_TOTAL_BYTES in all (older
    logs past it are listed as skipped), and only lines since --logs-since when given."""
    build_dir = ctx.need_build_dir()
    paths = _log_paths(ctx, build_dir)
    if not paths:
        raise Absent(f"no logs in {build_dir / STATE_DIR / 'logs'}")
    out: dict[str, object] = {}
    budget = LOGS_TOTAL_BYTES
    for path in paths:
        if budget <= 0:
            ctx.skip(path, f"the logs' size budget ({LOGS_TOTAL_BYTES} bytes, newest first) is spent")
            continue
        size = os.lstat(path).st_size
        raw = _read_inside(ctx, path, min(LOG_TAIL_BYTES, budget), tail=True)
        if raw is None:
            continue
        budget -= len(raw)
        text = raw.decode("utf-8", errors="replace")
        if size > len(raw):  # say so in the file itself, where a reader of the log will see it
            omitted = size - len(raw) + len(text.split("\n", 1)[0]) + 1
            text = f"[tqdeploy bundle: the first {omitted} bytes of {path.name} omitted]\n" + text.split("\n", 1)[-1]
        if ctx.logs_since_s is not None:
            text = _since(text, ctx.now - ctx.logs_since_s)
        out[f"logs/{path.name}"] = text
    return out


def _since(text: str, cutoff: float) -> str:
    """Stamped lines at or after cutoff; an unstamped line goes with the stamped line before it. A log with
    no stamp at all (a raw vLLM log) has no times to cut by: its tail is kept whole."""
    kept: list[str] = []
    keep = stamped = False
    for line in text.splitlines(keepends=True):
        when, _ = split(line)
        if when is not None:
            keep, stamped = when >= cutoff, True
        if keep:
            kept.append(line)
    return "".join(kept) if stamped else text


def _profiles(build_dir: Path) -> list[tuple[float, str]]:
    """profile.json files under the build (not under models/, no symlinked folder entered), bounded walk."""
    found: list[tuple[float, str]] = []
    seen = 0
    for root, dirs, files in os.walk(build_dir, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "models" and not os.path.islink(os.path.join(root, d)))
        seen += len(files)
        if seen > PROFILE_WALK_LIMIT:
            break
        if "profile.json" in files:
            path = os.path.join(root, "profile.json")
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                found.append((st.st_mtime, path))
    return found


def collect_profile(ctx: BundleContext, inputs: Inputs) -> Files:
    """The newest profile.json under the build dir (written by `tqdeploy profile`)."""
    build_dir = ctx.need_build_dir()
    found = _profiles(build_dir)
    if not found:
        raise Absent(f"no profile.json under {build_dir}")
    _, newest = max(found)
    data = _read_inside(ctx, Path(newest), PROFILE_MAX_BYTES)
    if data is None:
        raise Absent(f"{newest} could not be read safely (see skipped)")
    return {"profile/profile.json": data}
