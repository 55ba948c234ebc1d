"""Small helpers shared by the host checks."""

from __future__ import annotations

from collections.abc import Callable

from tqdeploy.doctor.registry import HostInputs, skipped
from tqdeploy.findings import Finding
from tqdeploy.snapshot import GPU, HostSnapshot
from tqdeploy.units import GiB

MIB = 1024**2


def gib(n: int | None) -> float | None:
    return None if n is None else round(n / GiB, 2)


def mib(n: int | None) -> float | None:
    return None if n is None else round(n / MIB, 1)


def no_gpu_verdict(host: HostSnapshot) -> Finding | None:
    """The skip every per-GPU check returns when there is nothing to look at."""
    if not host.driver.get("present"):
        return skipped("no NVIDIA driver (see TQ101)")
    if not host.gpus:
        return skipped("no GPU visible (see TQ101)")
    return None


def unreadable_gpu_verdict(gpu: GPU) -> Finding | None:
    """The skip a per-GPU check returns for a GPU NVML could not open (TQ101 reports it as an error)."""
    if "handle" in (gpu.field_errors or {}):
        return skipped(
            f"GPU {gpu.index} not accessible through NVML (see TQ101)",
            {"gpu": gpu.index},
            title=f"GPU {gpu.index}: not accessible",
        )
    return None


def per_gpu(ctx: HostInputs, judge: Callable[[HostInputs, GPU], Finding]) -> Finding | list[Finding]:
    """One verdict per GPU from judge(ctx, gpu), with the shared skips for no GPU and for a GPU NVML
    could not open."""
    if (v := no_gpu_verdict(ctx.host)) is not None:
        return v
    return [unreadable_gpu_verdict(gpu) or judge(ctx, gpu) for gpu in ctx.host.gpus]
