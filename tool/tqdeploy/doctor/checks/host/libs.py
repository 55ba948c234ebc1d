"""TQ121 CUDA runtime and cuDNN as the server would load them (wheels first, then the linker cache).

torch and vLLM load the nvidia-* wheels of their Python environment (RPATH into site-packages)
before the system copies, so the wheel versions are what a `pip install vllm` server uses; the
recorded H200 host shows torch on the 9.19 wheel while ldconfig lists another libcudnn.
"""

from __future__ import annotations

import re

from tqdeploy.doctor.checks.host.cudacompat import build_cuda, cuda_tuple
from tqdeploy.doctor.registry import HostInputs, Verdicts, host_check, info, passed, skipped, warn


def _wheel_cuda_major(name: str) -> int | None:
    m = re.search(r"-cu(\d+)$", name)
    return int(m.group(1)) if m else None


@host_check("TQ121", "libraries", "CUDA runtime and cuDNN the server will load")
def cuda_libraries(ctx: HostInputs) -> Verdicts:
    libs = ctx.host.cuda_libs
    if not libs:
        return skipped(ctx.host.probe_errors.get("cuda_libs", "not probed"))
    wheels = libs.get("wheels") or {}
    ld = libs.get("ldconfig") or {}
    target, _ = build_cuda(ctx.options.get("vllm_version"), ctx.options.get("image_cuda"))
    cudnn_wheels = {k: v for k, v in wheels.items() if k.startswith("nvidia-cudnn-")}
    runtime_wheels = {k: v for k, v in wheels.items() if k.startswith("nvidia-cuda-runtime")}
    ev = {
        "cudnn": (
            f"{next(iter(cudnn_wheels))} {next(iter(cudnn_wheels.values()))} (wheel)"
            if cudnn_wheels
            else (ld.get("cudnn") or [None])[0]
        ),
        "cuda_runtime": (
            f"{next(iter(runtime_wheels))} {next(iter(runtime_wheels.values()))} (wheel)"
            if runtime_wheels
            else (ld.get("cudart") or [None])[0]
        ),
        "wheels": wheels,
        "wheels_of_python_env": libs.get("python_env"),
        "system_cudnn": ld.get("cudnn", [])[:2],
        "system_cudart": ld.get("cudart", [])[:2],
        "build_cuda": target,
    }
    if target:
        need = cuda_tuple(target)[0]
        wrong = sorted(k for k in wheels if (m := _wheel_cuda_major(k)) is not None and m != need)
        if wrong:
            return warn(
                ev,
                f"this environment has CUDA {', '.join(sorted({str(_wheel_cuda_major(k)) for k in wrong}))} "
                f"wheels but vLLM's build uses CUDA {need}: install vLLM into a fresh venv so pip pulls matching "
                f"nvidia-* wheels",
                title=f"nvidia-* wheels for another CUDA major than the build's CUDA {target}: {', '.join(wrong)}",
            )
    if not wheels and not any(ld.get(k) for k in ("cudnn", "cudart")):
        return info(
            ev,
            "nothing to load outside a container: `pip install vllm` brings CUDA and cuDNN as wheels, "
            "and the vllm/vllm-openai image has its own",
            title="no CUDA runtime or cuDNN found on this host",
        )
    return passed(ev, title=f"cuDNN: {ev['cudnn'] or 'none'}; CUDA runtime: {ev['cuda_runtime'] or 'none'}")
