"""The containers' cache import (storage.cache_artifact): the one-shot command compose's `NAME-cache-import`
service and the Kubernetes init container run before the server, from startcache.pyz in the image.

The artifact's folder is mounted read-only at ARTIFACT_DIR: for compose the folder storage.cache_artifact lies in
(relative to the build), for Kubernetes the PersistentVolumeClaim `NAME-startcache` the operator fills with the
file (`kubectl cp`, or a Job of their own). The arguments carry what the container cannot read itself: the build's
cache fingerprint and flags (render/fingerprint.py), as tqdeploy.lock.json records them.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from tqdeploy.deployspec.model import Spec
from tqdeploy.render.fingerprint import CacheFingerprint

PYZ = "startcache.pyz"
ARTIFACT_DIR = "/artifact"


def cache_import_context(spec: Spec, paths: dict[str, str], fingerprint: CacheFingerprint) -> dict[str, Any] | None:
    """None when the spec names no artifact (or serves across nodes: a LeaderWorkerSet group fills its volume on
    its first start, as for the warm-up). fingerprint: the build's cache_fingerprint, computed once."""
    artifact = spec.storage.cache_artifact
    if not artifact or spec.multi_node:
        return None
    name = posixpath.basename(artifact)
    argv = ["python3", f"/opt/tqdeploy/{PYZ}", "import", f"{ARTIFACT_DIR}/{name}", "--volume", paths["vllm_cache"],
            "--model-dir", spec.container_model_path, "--fingerprint", fingerprint.sha256,
            "--flags", json.dumps(fingerprint.factors["flags"])]  # fmt: skip
    return {
        "host_dir": posixpath.dirname(artifact) or ".",
        "claim": f"{spec.name}-startcache",
        "argv": argv,
        "compose_key": f"{paths['api_key']}",
        "k8s_key": paths["k8s_api_key"],
    }
