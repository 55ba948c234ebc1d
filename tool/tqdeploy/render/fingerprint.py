"""The cache volume's fingerprint: what the compiled and tuned artefacts on it depend on, known at build time.

vLLM keys its own caches by much of this (compile factors, the startup plan's fingerprint, FlashInfer's version and
GPU architecture in its workspace path); a volume filled by another build mostly misses, so a start on it is cold.
The lock records the fingerprint; warmup.sh writes it with the GPU's name onto the volume once a start is ready;
`profile` says when the two differ. The GPU is not in the spec: warmup.sh reads it (nvidia-smi) on the host.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from tqdeploy.deployspec.accel import Accelerators, accelerators
from tqdeploy.deployspec.command import VllmCommand
from tqdeploy.deployspec.model import Spec
from tqdeploy.render.caches import moved_caches


def fingerprint_factors(spec: Spec, command: VllmCommand, accel: Accelerators) -> dict[str, Any]:
    m, img = spec.model, spec.image
    return {
        "vllm_version": spec.vllm_version,
        "variant": spec.variant,
        "image": f"{img.base}@{img.digest}" if img.digest else img.base,
        "model": f"{m.repo}@{m.revision}" if m.repo else f"path:{m.path}",
        "flags": list(command.flags),
        "gpus": spec.resources.gpus,
        "env": {
            "startup_plan": accel.startup_plan,
            "aot_compile_off": accel.cpu_inductor_cache,
            "caches": {c.env: c.subdir for c in moved_caches()},
        },
    }


@dataclass(frozen=True)
class CacheFingerprint:
    """The sha256 of the factors, and the factors (the lock records both; warmup.sh writes the sha256)."""

    sha256: str
    factors: dict[str, Any]  # JSON, as the lock holds it

    def to_dict(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "factors": self.factors}


def cache_fingerprint(spec: Spec, command: VllmCommand, accel: Accelerators | None = None) -> CacheFingerprint:
    """accel: the spec's start-up accelerators as the build computed them (computed here when not given)."""
    factors = fingerprint_factors(spec, command, accel or accelerators(spec))
    digest = hashlib.sha256(json.dumps(factors, sort_keys=True, ensure_ascii=True).encode("ascii")).hexdigest()
    return CacheFingerprint(digest, factors)
