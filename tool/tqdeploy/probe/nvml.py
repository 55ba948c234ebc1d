"""GPU facts through NVML (nvidia-ml-py), never by parsing nvidia-smi text.

All NVML calls go through one adapter object that has pynvml's function names (``nvmlInit``,
``nvmlDeviceGetMemoryInfo``...). The real adapter is the ``pynvml`` module itself; tests pass a
stand-in with the same names. Every per-field failure is recorded, never raised: a driver that
answers NotSupported for one query must not hide the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tqdeploy.adaptors import nvml
from tqdeploy.snapshot import GPU

# Fallback when the adapter lacks NVML_NVLINK_MAX_LINKS (nvidia-ml-py 13.x defines 36). The loop stops
# at the first link NVML rejects, so a larger bound costs nothing.
MAX_NVLINKS = 36
# The pynvml module, or a test's stand-in with its names; nvidia-ml-py ships no types. Its device handles and
# answer structs (memory info, process info) come back untyped too.
NVMLAdapter = Any


class NoDriver(Exception):
    """NVML could not start: no library, no driver loaded, or no permission."""


def load_adapter() -> NVMLAdapter:
    """The real NVML adapter (the pynvml module). Raises NoDriver when it cannot be used."""
    try:
        return nvml.load()
    except ImportError as exc:
        raise NoDriver(f"nvidia-ml-py is not installed ({exc})") from exc


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def _decode(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def init_nvml(nv: NVMLAdapter) -> None:
    """Start NVML; NoDriver when it cannot be used. After this the caller owns an nvmlShutdown()."""
    try:
        nv.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, _NoPermission...
        raise NoDriver(_err(exc)) from exc


def probe_nvml(nv: NVMLAdapter) -> tuple[dict[str, Any], list[GPU], list[Any]]:
    """Read driver facts and every GPU of a started NVML. Returns (driver, gpus, handles).

    A GPU whose handle NVML refuses (NVMLError_GpuIsLost after an Xid 79, NoPermission for a GPU
    outside the container's cgroup) is kept as an entry with ``field_errors["handle"]`` and a None
    handle, so the checks name it instead of the whole probe failing.
    """
    driver: dict[str, Any] = {"present": True}
    for key, fn in (
        ("version", "nvmlSystemGetDriverVersion"),
        ("cuda_driver", "nvmlSystemGetCudaDriverVersion_v2"),
        ("nvml_version", "nvmlSystemGetNVMLVersion"),
    ):
        try:
            driver[key] = _decode(getattr(nv, fn)())
        except Exception as exc:
            driver[key] = None
            driver.setdefault("errors", {})[key] = _err(exc)
    try:
        count = int(nv.nvmlDeviceGetCount())
    except Exception as exc:
        driver.setdefault("errors", {})["gpu_count"] = _err(exc)
        return driver, [], []
    gpus: list[GPU] = []
    handles: list[Any] = []
    for index in range(count):
        try:
            handle = nv.nvmlDeviceGetHandleByIndex(index)
        except Exception as exc:
            handles.append(None)
            gpus.append(GPU(index=index, field_errors={"handle": _err(exc)}))
            continue
        handles.append(handle)
        gpus.append(_probe_gpu(nv, index, handle))
    return driver, gpus, handles


def _probe_gpu(nv: NVMLAdapter, index: int, h: Any) -> GPU:
    gpu = GPU(index=index)

    def read(name: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as exc:
            gpu.field_errors[name] = _err(exc)
            return None

    gpu.name = read("name", lambda: _decode(nv.nvmlDeviceGetName(h))) or ""
    gpu.uuid = read("uuid", lambda: _decode(nv.nvmlDeviceGetUUID(h))) or ""
    mem = read("memory", lambda: nv.nvmlDeviceGetMemoryInfo(h))
    if mem is not None:
        gpu.memory_total, gpu.memory_used = int(mem.total), int(mem.used)
    cc = read("compute_capability", lambda: nv.nvmlDeviceGetCudaComputeCapability(h))
    gpu.compute_capability = list(cc) if cc is not None else None
    gpu.pci_bus_id = read("pci_bus_id", lambda: _decode(nv.nvmlDeviceGetPciInfo(h).busId)) or ""
    gpu.pcie = {
        "gen_cur": read("pcie_gen_cur", lambda: nv.nvmlDeviceGetCurrPcieLinkGeneration(h)),
        "gen_max": read("pcie_gen_max", lambda: nv.nvmlDeviceGetMaxPcieLinkGeneration(h)),
        "gen_gpu_max": read("pcie_gen_gpu_max", lambda: nv.nvmlDeviceGetGpuMaxPcieLinkGeneration(h)),
        "width_cur": read("pcie_width_cur", lambda: nv.nvmlDeviceGetCurrPcieLinkWidth(h)),
        "width_max": read("pcie_width_max", lambda: nv.nvmlDeviceGetMaxPcieLinkWidth(h)),
    }
    ecc = read("ecc_mode", lambda: nv.nvmlDeviceGetEccMode(h))
    gpu.ecc_mode = [int(v) for v in ecc] if ecc is not None else None
    pending = read("retired_pages_pending", lambda: nv.nvmlDeviceGetRetiredPagesPendingStatus(h))
    gpu.retired_pages_pending = bool(pending) if pending is not None else None
    rows = read("remapped_rows", lambda: nv.nvmlDeviceGetRemappedRows(h))
    if rows is not None:  # (corrRows, uncRows, isPending, failureOccurred), nvml.h
        names = ("correctable", "uncorrectable", "pending", "failure")
        gpu.remapped_rows = dict(zip(names, (int(v) for v in rows), strict=False))
    persistence = read("persistence", lambda: nv.nvmlDeviceGetPersistenceMode(h))
    gpu.persistence = bool(persistence) if persistence is not None else None
    mig = read("mig_mode", lambda: nv.nvmlDeviceGetMigMode(h))
    gpu.mig_mode = [int(v) for v in mig] if mig is not None else None
    procs = read("processes", lambda: nv.nvmlDeviceGetComputeRunningProcesses(h)) or []
    gpu.processes = [{"pid": int(p.pid), "used_memory": _memory(p)} for p in procs]
    gpu.nvlinks, gpu.nvlink_error = _probe_nvlinks(nv, h)
    return gpu


def _memory(proc: Any) -> int | None:
    used = getattr(proc, "usedGpuMemory", None)
    return int(used) if isinstance(used, int) else None  # None: not available (e.g. inside a container)


def _probe_nvlinks(nv: NVMLAdapter, h: Any) -> tuple[list[dict[str, Any]], str]:
    links: list[dict[str, Any]] = []
    for link in range(int(getattr(nv, "NVML_NVLINK_MAX_LINKS", MAX_NVLINKS))):
        try:
            active = bool(nv.nvmlDeviceGetNvLinkState(h, link))
        except Exception as exc:
            # NotSupported on link 0: no NVLink on this GPU/VM. InvalidArgument past the last link.
            return links, ("" if links else _err(exc))
        entry: dict[str, Any] = {"link": link, "active": active, "version": None, "remote": None}
        if active:
            try:
                entry["version"] = int(nv.nvmlDeviceGetNvLinkVersion(h, link))
            except Exception:
                pass
            try:
                entry["remote"] = _decode(nv.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId)
            except Exception:
                pass
        links.append(entry)
    return links, ""
