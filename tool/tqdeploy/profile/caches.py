"""What vLLM's log does not say about a start's caches: for each (render/caches.py) hit, miss or absent, from
its folder before and after the start; TQ439 when one lives outside the cache volume (a container would lose it);
TQ441 when the volume's fingerprint (warmup.sh) is not the build's (tqdeploy.lock.json).

Where each cache is: the build's serve.sh exports its variable (under VLLM_CACHE_ROOT) or, for a build rendered
before it did, the library's default under HOME or TMPDIR, unless this environment sets the variable (serve.sh
keeps what the environment sets). The folders are untrusted: the walk never follows a link, stops after
MAX_ENTRIES entries or MAX_WALK_S seconds (marked truncated), and reads no file, only sizes and mtimes.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import stat
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from tqdeploy.buildfolder import read_lock
from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.profile.jsontypes import JSONObject
from tqdeploy.render.caches import FINGERPRINT_FILE, START_CACHES, StartCache
from tqdeploy.safeio import is_within, read_text
from tqdeploy.startcache.manifest import RECEIPT
from tqdeploy.startcache.unpack import read_receipt

MAX_ENTRIES = 50_000
MAX_WALK_S = 3.0
SERVE_SH_LIMIT = 1 << 20


@dataclass(frozen=True)
class CacheState:
    path: str
    exists: bool
    files: int = 0
    bytes: int = 0
    newest_mtime: float = 0.0
    truncated: bool = False


def walk(path: Path, deadline: float) -> CacheState:
    """Files, bytes and the newest mtime under ``path``; links are counted, never followed."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return CacheState(str(path), False)
    except OSError:
        return CacheState(str(path), False)
    files = size = seen = 0
    newest = 0.0
    stack = [str(path)]
    while stack:
        top = stack.pop()
        try:
            with os.scandir(top) as entries:
                for entry in entries:
                    seen += 1
                    if seen > MAX_ENTRIES or time.monotonic() > deadline:
                        return CacheState(str(path), True, files, size, newest, True)
                    st = entry.stat(follow_symlinks=False)
                    newest = max(newest, st.st_mtime)
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif stat.S_ISREG(st.st_mode):
                        files += 1
                        size += st.st_size
        except OSError:
            continue  # unreadable or vanished while walking
    return CacheState(str(path), True, files, size, newest)


def _rendered_vars(build: Path) -> set[str]:
    """The cache variables the build's serve.sh exports (none for a build rendered before it did)."""
    try:
        text = read_text(build / "serve.sh", SERVE_SH_LIMIT, "serve.sh", within=build)
    except (TQError, OSError):
        return set()
    return {c.env for c in START_CACHES if c.env and re.search(rf"^export {c.env}=", text, re.M)}


def _default(cache: StartCache, env: Mapping[str, str], vllm_root: Path) -> Path:
    user = next((env[n] for n in ("LOGNAME", "USER", "LNAME", "USERNAME") if env.get(n)), "")  # getpass's order
    if not user:
        user = pwd.getpwuid(os.getuid()).pw_name
    text = (
        cache.default.replace("$VLLM_CACHE_ROOT", str(vllm_root))
        .replace("$HOME", env.get("HOME") or os.path.expanduser("~"))
        .replace("$TMPDIR", env.get("TMPDIR") or tempfile.gettempdir())
        .replace("$USER", re.sub(r"[\\/:*?\"<>|]", "_", user))  # as torch sanitizes it
    )
    return Path(text)


def locations(build: Path, env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Where each cache of a start of this build (process runtime) lives."""
    env = os.environ if env is None else env
    build = Path(build).resolve()
    vllm_root = Path(env.get("VLLM_CACHE_ROOT") or build / ".tqdeploy" / "cache" / "vllm")
    rendered = _rendered_vars(build)
    out: dict[str, Path] = {}
    for c in START_CACHES:
        if not c.env and not c.subdir:  # nothing moves it
            out[c.key] = _default(c, env, vllm_root)
        elif not c.env:
            out[c.key] = vllm_root / c.subdir
        elif env.get(c.env):
            out[c.key] = Path(env[c.env])
        elif c.env in rendered:
            out[c.key] = vllm_root / c.subdir
        else:
            out[c.key] = _default(c, env, vllm_root)
    return out


def snapshot(where: Mapping[str, Path]) -> dict[str, CacheState]:
    deadline = time.monotonic() + MAX_WALK_S
    return {key: walk(path, deadline) for key, path in where.items()}


def cleared(states: Mapping[str, CacheState], root: Path) -> dict[str, CacheState]:
    """The states with every cache under ``root`` gone (a cold start removed that folder)."""
    return {k: CacheState(v.path, False) if is_within(Path(v.path), root) else v for k, v in states.items()}


def verdict(before: CacheState, after: CacheState) -> str:
    """hit: it held files before and the start wrote nothing there; miss: the start wrote there; absent: nothing
    there after the start (this start does not use it); unknown: a walk was cut short."""
    if before.truncated or after.truncated:
        return "unknown"
    if not after.exists or after.files == 0:
        return "absent"
    wrote = after.files != before.files or after.bytes != before.bytes or after.newest_mtime > before.newest_mtime
    return "miss" if wrote or before.files == 0 else "hit"


def report(before: Mapping[str, CacheState], after: Mapping[str, CacheState]) -> list[JSONObject]:
    titles = {c.key: c.title for c in START_CACHES}
    return [
        {"cache": key, "title": titles[key], "verdict": verdict(before[key], after[key])}
        | {k: v for k, v in asdict(after[key]).items() if k != "exists"}
        for key in after
    ]


def mark_imported(rows: list[JSONObject], vllm_root: Path) -> None:
    """Add to each cache's row what `tqdeploy cache import` put there (its receipt on the volume) and whether the
    starts since used it: imported "hit" when the cache holds no file but the imported ones, unchanged since the
    import wrote its receipt (the last thing it writes); "miss" when a start wrote there after the import (its key
    differed: compare the artifact's manifest); None when nothing was imported into it. Judged from the files, not
    from the before/after walk: `up` imports while it starts, after profile's first walk. The receipt is untrusted
    (startcache.unpack.read_receipt bounds it); the walk follows no link and stops like walk()."""
    receipt = read_receipt(vllm_root)
    files = receipt.get("files") if receipt else None
    if not isinstance(files, dict):
        return
    known = {f for f in files if isinstance(f, str)}
    root = Path(os.path.realpath(vllm_root))
    since = os.stat(root / RECEIPT, follow_symlinks=False).st_mtime_ns
    deadline = time.monotonic() + MAX_WALK_S
    for row in rows:
        real = Path(os.path.realpath(row["path"]))
        rel = real.relative_to(root).as_posix() if root in real.parents else None
        count = sum(1 for f in known if rel and f.startswith(rel + "/"))
        row["imported_files"] = count
        row["import"] = None
        if count:
            written = _written_since(real, root, since, known, deadline)
            row["written_since_import"] = written
            row["import"] = "unknown" if written is None else ("miss" if written else "hit")


def _written_since(folder: Path, root: Path, since_ns: int, known: set[str], deadline: float) -> int | None:
    """Files under folder that are not the import's or changed after it; None when the walk was cut short."""
    written = seen = 0
    stack = [str(folder)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > MAX_ENTRIES or time.monotonic() > deadline:
                        return None
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                        continue
                    rel = Path(entry.path).relative_to(root).as_posix()
                    if rel not in known or entry.stat(follow_symlinks=False).st_mtime_ns > since_ns:
                        written += 1
        except OSError:
            continue
    return written


def outside_volume_findings(build: Path, where: Mapping[str, Path], after: Mapping[str, CacheState]) -> list[Finding]:
    """TQ439 for each cache with files that lives outside the folder holding VLLM_CACHE_ROOT."""
    volume = where["compile"].parent.parent  # VLLM_CACHE_ROOT/torch_compile_cache -> the cache volume
    out: list[Finding] = []
    for c in START_CACHES:
        state = after[c.key]
        if not state.files or is_within(where[c.key], volume):
            continue
        movable = bool(c.env or c.subdir)
        out.append(
            Finding(
                "TQ439",
                Severity.WARN if movable else Severity.INFO,
                f"{c.title} lives outside the cache volume ({state.files} files, {state.bytes / 1e6:.1f} MB in "
                f"{where[c.key]}): a recreated container or pod starts without it",
                {
                    "cache": c.key,
                    "path": str(where[c.key]),
                    "volume": str(volume),
                    "files": state.files,
                    "bytes": state.bytes,
                    "variable": c.env,
                    "source": c.source,
                },
                f"rebuild with this tqdeploy (`tqdeploy build`): serve.sh then exports {c.env} under VLLM_CACHE_ROOT"
                if c.env
                else "keep VLLM_CACHE_ROOT on the cache volume"
                if movable
                else "no variable moves it but TMPDIR, which also holds vLLM's IPC sockets: a recreated container "
                "rebuilds it on its first compile",
                "start-up",
            )
        )
    return out


def fingerprint_finding(build: Path, vllm_root: Path) -> Finding | None:
    """TQ441 when the volume holds another build's fingerprint; None when it matches or nothing is recorded."""
    try:
        wanted = (read_lock(build).get("cache_fingerprint") or {}).get("sha256")
        recorded = json.loads(read_text(vllm_root / FINGERPRINT_FILE, 4096, "cache fingerprint", within=vllm_root))
    except (TQError, OSError, ValueError, AttributeError):
        return None
    found = recorded.get("sha256") if isinstance(recorded, dict) else None
    if not isinstance(wanted, str) or not isinstance(found, str) or found == wanted:
        return None
    return Finding(
        "TQ441",
        Severity.WARN,
        "the cache volume was filled for another build (its fingerprint is not this build's): expect a cold start",
        {
            "volume_fingerprint": found[:64],
            "build_fingerprint": wanted,
            "gpu": str(recorded.get("gpu", ""))[:80],
            "vllm_version": str(recorded.get("vllm_version", ""))[:32],
            "file": str(vllm_root / FINGERPRINT_FILE),
        },
        "run this build's warm-up once before serving (compose: `docker compose run --rm NAME-warmup`; Kubernetes: "
        "k8s/warmup-job.yaml), or give each build its own cache volume",
        "start-up",
    )


def cache_findings(build: Path, where: Mapping[str, Path], after: Mapping[str, CacheState]) -> list[Finding]:
    found = outside_volume_findings(build, where, after)
    fp = fingerprint_finding(build, where["compile"].parent)
    return found + ([fp] if fp else [])
