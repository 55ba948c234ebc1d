"""Loaded specs with a few values changed, for tests that hand a spec to code below the build (a Deployment's)."""

from __future__ import annotations

import dataclasses

from tqdeploy.deployspec import load_spec
from tqdeploy.deployspec.model import Spec


def spec_with(embedded: str = "tiny-cpu-demo", *, gpus: str | tuple[int, ...] | None = None, **vllm) -> Spec:
    """An embedded spec with [vllm] values (and resources.gpus) replaced: a loaded spec is frozen, so a changed
    one is a new one, as the build makes it (dataclasses.replace)."""
    spec = load_spec(embedded=embedded)
    spec = dataclasses.replace(spec, vllm=dataclasses.replace(spec.vllm, **vllm))
    if gpus is not None:
        spec = dataclasses.replace(spec, resources=dataclasses.replace(spec.resources, gpus=gpus))
    return spec
