"""VLLM_API_KEY in vLLM's own environment on a release that hashes it into the compile cache (TQ344).

vLLM 0.25.0's vllm/envs.py compile_factors() hashes every variable of its environment_variables table except an
ignored set without VLLM_API_KEY into the torch.compile cache key, and vllm/compilation/backends.py writes the raw
values to torch_compile_cache/<hash>/rank_0_0/backbone/cache_key_factors.json: the key lands in plain text on the
cache volume, and a rotated key misses the cache (seen on an H200: a new directory and a recompile). 0.32.0 ignores
it. Which release does is data (checks/compile-cache-env.json), not a version comparison.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from tqdeploy.findings import Finding, Severity
from tqdeploy.lint.registry import LintContext, rule
from tqdeploy.lint.report import lint_finding
from tqdeploy.resources import data_dir

DATA_FILE = "compile-cache-env.json"
KEY_ENV = "VLLM_API_KEY"


@lru_cache(maxsize=1)
def compile_key_releases() -> dict[str, dict[str, Any]]:
    raw = json.loads((data_dir("checks") / DATA_FILE).read_text(encoding="utf-8"))
    return dict(raw["releases"])


def api_key_in_compile_key(version: str) -> bool | None:
    """True when this release hashes VLLM_API_KEY into its compile-cache key; None when not read for it."""
    entry = compile_key_releases().get(version.lstrip("v"))
    return None if entry is None else bool(entry["api_key_in_compile_key"])


@rule("TQ344", "exposure", "VLLM_API_KEY in vLLM's environment is hashed into the compile cache")
def api_key_env_in_compile_cache(ctx: LintContext) -> list[Finding]:
    inv = ctx.inv
    if KEY_ENV not in inv.env or not api_key_in_compile_key(ctx.schema.version):
        return []
    how = "docker -e passes it into the container" if inv.kind.startswith("docker") else "it is in vLLM's environment"
    span = inv.env_spans.get(KEY_ENV)
    return [
        lint_finding(
            "TQ344",
            Severity.WARN,
            KEY_ENV,
            f"VLLM_API_KEY is set for vLLM {ctx.schema.version} ({how}): this release hashes it into the "
            "torch.compile cache key and writes its value in plain text to cache_key_factors.json under "
            "VLLM_CACHE_ROOT; a rotated key recompiles",
            "keep the key out of vLLM's environment: set args.api_key in-process from the key file (tqdeploy build "
            "renders launch_vllm.py for this), or pin a release that ignores it (0.32.0); then delete "
            "VLLM_CACHE_ROOT/torch_compile_cache, which holds the old key",
            None,
            span[0] if span else -1,
        )
    ]
