"""TQ101 NVIDIA driver present; TQ102 the driver's CUDA against the CUDA of the chosen vLLM build."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from tqdeploy.doctor.checks.host.cudacompat import build_cuda, cuda_tuple, driver_cuda_str, min_driver_for, variants_for
from tqdeploy.doctor.registry import HostInputs, Verdicts, error, host_check, info, passed, skipped, warn


@host_check("TQ101", "driver", "NVIDIA driver and visible GPUs")
def driver_present(ctx: HostInputs) -> Verdicts:
    d = ctx.host.driver
    if not d.get("present"):
        reason = d.get("error") or ctx.host.probe_errors.get("nvml") or "NVML was not probed"
        return error(
            {"nvml": reason},
            f"install the NVIDIA data-center driver ({_driver_needed(ctx)}) "
            "and check `nvidia-smi`; inside a container start it with `--gpus all`",
            title="no NVIDIA driver: NVML cannot be loaded",
        )
    ev = {"driver": d.get("version"), "cuda_driver": driver_cuda_str(d.get("cuda_driver")), "gpus": len(ctx.host.gpus)}
    if d.get("errors"):
        ev["nvml_errors"] = d["errors"]
    if not ctx.host.gpus:
        return error(
            ev,
            "check `nvidia-smi -L`; in a container pass `--gpus all` (or a CDI device)",
            title="NVIDIA driver loaded but no GPU visible",
        )
    lost = {g.index: g.field_errors["handle"] for g in ctx.host.gpus if "handle" in (g.field_errors or {})}
    if lost:
        names = ", ".join(str(i) for i in lost)
        return error(
            ev | {"not_accessible": lost},
            "check `nvidia-smi` and the kernel log for Xid errors (`sudo dmesg | grep -i xid`); a GPU that "
            "fell off the bus needs a GPU reset or a reboot; in a container, check which GPUs it was given",
            title=f"NVML cannot open GPU(s) {names} of {len(ctx.host.gpus)}",
        )
    return passed(ev, title=f"NVIDIA driver {d.get('version')} with {len(ctx.host.gpus)} GPU(s)")


def _driver_needed(ctx: HostInputs) -> str:
    """'>= 580 for vLLM 0.32.0 (CUDA 13.0)' from checks/cuda_compat.json, or a pointer to TQ102 when unknown."""
    version = ctx.options.get("vllm_version")
    target, _ = build_cuda(version, ctx.options.get("image_cuda"))
    minimum = min_driver_for(target) if target else None
    if not minimum:
        return "the branch your vLLM build's CUDA needs, see TQ102"
    return f">= {minimum} for vLLM {version} (CUDA {target})" if version else f">= {minimum} for CUDA {target}"


@host_check("TQ102", "driver", "driver CUDA version covers the vLLM build")
def driver_cuda(ctx: HostInputs) -> Verdicts:
    d = ctx.host.driver
    if not d.get("present"):
        return skipped("no NVIDIA driver (see TQ101)")
    version = ctx.options.get("vllm_version")
    target, source = build_cuda(version, ctx.options.get("image_cuda"))
    have = driver_cuda_str(d.get("cuda_driver"))
    ev = {
        "vllm": version,
        "build_cuda": target,
        "build_cuda_from": source,
        "driver": d.get("version"),
        "driver_cuda": have,
    }
    if target is None:
        return info(
            ev,
            f"the CUDA of vLLM {version}'s builds is not in checks/cuda_compat.json: read it from the "
            "release notes and compare with the driver's CUDA (`nvidia-smi` header)",
            title=f"CUDA of vLLM {version} builds unknown",
        )
    if have is None:
        return warn(
            ev,
            "upgrade nvidia-ml-py or read the CUDA version from `nvidia-smi`",
            title="driver did not report its CUDA version",
        )
    need, got = cuda_tuple(target), cuda_tuple(have)
    minimum = min_driver_for(target)
    ev["driver_min_for_major"] = minimum
    if got[0] < need[0]:
        # a variant of the driver's CUDA major runs through minor version compatibility
        fits = sorted(tag for tag, cuda in variants_for(version).items() if cuda_tuple(cuda)[0] == got[0])
        alt = (
            f", or use the `{fits[0]}` build (image tag suffix -{fits[0]}, wheel +{fits[0]})"
            if fits
            else "; no build of this vLLM for the driver's CUDA is known"
        )
        return error(
            ev,
            f"upgrade the driver to >= {minimum} (CUDA {need[0]}.x){alt}; {_forward_compat(version, need)}",
            title=f"driver supports CUDA {have}, vLLM {version} is built for CUDA {target}",
        )
    if got < need:
        return warn(
            ev,
            f"upgrade the driver to one that reports CUDA >= {target}; until then CUDA minor version "
            "compatibility applies (features needing a newer driver, such as PTX JIT of newer code, fail)",
            title=f"driver CUDA {have} older than the build's CUDA {target} (minor version compatibility)",
        )
    return passed(ev, title=f"driver CUDA {have} covers vLLM {version} (CUDA {target})")


# vLLM 0.32.0 reads VLLM_ENABLE_CUDA_COMPATIBILITY (vllm/envs.py) and then puts the compat libraries
# (VLLM_CUDA_COMPATIBILITY_PATH, else /usr/local/cuda-<torch CUDA>/compat) first on LD_LIBRARY_PATH before
# torch loads (vllm/env_override.py, _maybe_set_cuda_compatibility_path). Older releases were not checked.
VLLM_COMPAT_ENV_SINCE = "0.32.0"


def _forward_compat(version: str | None, need: tuple[int, int]) -> str:
    package = f"cuda-compat-{need[0]}-{need[1]}"
    how = f"put /usr/local/cuda-{need[0]}.{need[1]}/compat first on LD_LIBRARY_PATH"
    try:
        if version and Version(version) >= Version(VLLM_COMPAT_ENV_SINCE):
            how = "set VLLM_ENABLE_CUDA_COMPATIBILITY=1 so vLLM loads it"
    except InvalidVersion:
        pass
    return (
        f"on data-center GPUs (not GeForce/RTX) NVIDIA's forward-compatibility package {package} also works: "
        f"install it and {how}"
    )
