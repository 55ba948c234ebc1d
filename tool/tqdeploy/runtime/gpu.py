"""GPU memory through NVML (nvidia-ml-py, imported lazily): per-GPU used/free/total and who holds it.

No NVML (no driver, no GPU, as on the CPU hosts) gives None: callers skip GPU checks cleanly.
"""

from __future__ import annotations

from typing import Any

from tqdeploy.probe import nvml  # the module, so its adapter stays replaceable at that boundary (tests)

MiB = 1 << 20


def gpu_memory() -> list[dict[str, Any]] | None:
    """One entry per GPU: index, name, used/free/total MiB and the compute processes on it; None without NVML."""
    try:
        nv = nvml.load_adapter()
        nvml.init_nvml(nv)
    except Exception:  # NoDriver, or a broken nvidia-ml-py install
        return None
    gpus: list[dict[str, Any]] = []
    try:
        for index in range(nv.nvmlDeviceGetCount()):
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            mem = nv.nvmlDeviceGetMemoryInfo(handle)
            name = nv.nvmlDeviceGetName(handle)
            gpus.append(
                {
                    "index": index,
                    "name": name.decode() if isinstance(name, bytes) else name,
                    "used_mib": mem.used // MiB,
                    "free_mib": mem.free // MiB,
                    "total_mib": mem.total // MiB,
                    "processes": _processes(nv, handle),
                }
            )
    except Exception:
        pass
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:
            pass
    return gpus


def _processes(nv: Any, handle: object) -> list[dict[str, Any]]:  # nv: the NVML adapter (probe/nvml.py)
    try:
        procs = nv.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:
        return []
    out = []
    for p in procs:
        used = getattr(p, "usedGpuMemory", None)
        out.append({"pid": p.pid, "used_mib": used // MiB if isinstance(used, int) else None})
    return out


def used_by_others(gpus: list[dict[str, Any]] | None, own_pids: set[int]) -> list[dict[str, Any]]:
    """The compute processes not of this deployment, across GPUs."""
    out = []
    for gpu in gpus or []:
        for p in gpu["processes"]:
            if p["pid"] not in own_pids:
                out.append({"gpu": gpu["index"], **p})
    return out
