"""Per-GPU checks: compute capability, ECC and memory health, persistence, MIG, memory held by others."""

from __future__ import annotations

from typing import Any

from tqdeploy.doctor.checks.host.common import gib, per_gpu
from tqdeploy.doctor.registry import HostInputs, Verdicts, error, host_check, info, passed, skipped, warn
from tqdeploy.findings import Finding
from tqdeploy.pins import DEFAULT_GPU_MEMORY_UTILIZATION
from tqdeploy.snapshot import GPU

VLLM_MIN_CC = (7, 5)  # vLLM's floor (docs/facts.md: "vLLM needs CC >= 7.5")
TURBOQUANT_MIN_CC = (8, 0)  # TurboQuant's effective floor: T4 (7.5) fails, vLLM issue #43576 (docs/facts.md)
# At start-up vLLM refuses to run when free memory < utilization x total (vllm/v1/worker/utils.py).


def _label(gpu: GPU) -> str:
    return f"GPU {gpu.index} ({gpu.name or 'unknown'})"


@host_check("TQ103", "gpu", "GPU model, memory and compute capability")
def compute_capability(ctx: HostInputs) -> Verdicts:
    return per_gpu(ctx, _compute_capability)


def _compute_capability(ctx: HostInputs, gpu: GPU) -> Finding:
    cc = tuple(gpu.compute_capability or ())
    ev = {
        "gpu": gpu.index,
        "name": gpu.name,
        "memory_gib": gib(gpu.memory_total),
        "compute_capability": ".".join(map(str, cc)) or None,
    }
    if not cc:
        return warn(
            ev,
            "update the driver / nvidia-ml-py; NVML did not report the compute capability",
            title=f"{_label(gpu)}: compute capability unknown",
        )
    elif cc < VLLM_MIN_CC:
        return error(
            ev,
            "use a GPU with compute capability >= 7.5 (vLLM's minimum); >= 8.0 for TurboQuant",
            title=f"{_label(gpu)}: compute capability {cc[0]}.{cc[1]} is below vLLM's 7.5",
        )
    elif cc < TURBOQUANT_MIN_CC:
        return warn(
            ev,
            "serve with --kv-cache-dtype auto or fp8 on this GPU; TurboQuant needs >= 8.0 (Ampere)",
            title=f"{_label(gpu)}: compute capability {cc[0]}.{cc[1]}: vLLM runs, TurboQuant does not",
        )
    else:
        return passed(ev, title=f"{_label(gpu)}: {gib(gpu.memory_total)} GiB, compute capability {cc[0]}.{cc[1]}")


@host_check("TQ104", "gpu", "ECC mode, retired pages and remapped rows")
def memory_health(ctx: HostInputs) -> Verdicts:
    return per_gpu(ctx, _memory_health)


def _memory_health(ctx: HostInputs, gpu: GPU) -> Finding:
    ev = {
        "gpu": gpu.index,
        "ecc_mode": gpu.ecc_mode,
        "retired_pages_pending": gpu.retired_pages_pending,
        "remapped_rows": gpu.remapped_rows,
    }
    rows = gpu.remapped_rows or {}
    if rows.get("failure"):
        return error(
            ev,
            "row remapping failed: the GPU's memory has exhausted its spare rows; "
            "take the GPU out of service and contact the vendor",
            title=f"{_label(gpu)}: row remapping failure",
        )
    elif rows.get("pending") or gpu.retired_pages_pending:
        return error(
            ev,
            f"drain the GPU and reset it (`sudo nvidia-smi -r -i {gpu.index}`) or reboot, "
            "so the pending remap/retirement takes effect",
            title=f"{_label(gpu)}: memory repair pending until GPU reset",
        )
    elif gpu.ecc_mode and gpu.ecc_mode[0] != gpu.ecc_mode[1]:
        return warn(
            ev,
            f"reset the GPU or reboot to apply the pending ECC mode (`nvidia-smi -i {gpu.index} -q -d ECC`)",
            title=f"{_label(gpu)}: ECC mode change pending",
        )
    elif rows.get("uncorrectable"):
        return warn(
            ev,
            "uncorrectable errors were remapped; watch `nvidia-smi -q -d ROW_REMAPPER` and the "
            "kernel log (Xid) for new ones",
            title=f"{_label(gpu)}: {rows['uncorrectable']} row(s) remapped after uncorrectable errors",
        )
    elif gpu.ecc_mode and gpu.ecc_mode[0] == 0:
        return info(
            ev,
            f"enable ECC for long-running serving: `sudo nvidia-smi -i {gpu.index} -e 1` then reboot",
            title=f"{_label(gpu)}: ECC off",
        )
    else:
        return passed(ev, title=f"{_label(gpu)}: ECC and memory repair state clean")


@host_check("TQ105", "gpu", "persistence mode")
def persistence(ctx: HostInputs) -> Verdicts:
    return per_gpu(ctx, _persistence)


def _persistence(ctx: HostInputs, gpu: GPU) -> Finding:
    ev = {"gpu": gpu.index, "persistence": gpu.persistence}
    if gpu.persistence is False:
        return warn(
            ev,
            "enable it: `sudo systemctl enable --now nvidia-persistenced` "
            "(or `sudo nvidia-smi -i N -pm 1`); without it the driver tears the GPU down between "
            "clients and each start pays the initialisation again",
            title=f"{_label(gpu)}: persistence mode off",
        )
    elif gpu.persistence is None:
        return info(ev, "", title=f"{_label(gpu)}: persistence mode not reported")
    else:
        return passed(ev, title=f"{_label(gpu)}: persistence mode on")


@host_check("TQ106", "gpu", "MIG mode")
def mig(ctx: HostInputs) -> Verdicts:
    return per_gpu(ctx, _mig)


def _mig(ctx: HostInputs, gpu: GPU) -> Finding:
    mode = gpu.mig_mode
    ev = {"gpu": gpu.index, "mig_current": mode[0] if mode else None, "mig_pending": mode[1] if mode else None}
    if not mode:
        return passed(ev, title=f"{_label(gpu)}: MIG not supported or not reported")
    elif mode[0] == 1:
        return warn(
            ev,
            f"vLLM then sees MIG instances (a slice of memory and SMs each), not the whole GPU; "
            f"to serve on the full GPU: `sudo nvidia-smi -i {gpu.index} -mig 0` and reset the GPU",
            title=f"{_label(gpu)}: MIG enabled",
        )
    elif mode[1] != mode[0]:
        return warn(
            ev,
            f"a MIG mode change is pending: reset the GPU (`sudo nvidia-smi -r -i {gpu.index}`)",
            title=f"{_label(gpu)}: MIG mode change pending",
        )
    else:
        return passed(ev, title=f"{_label(gpu)}: MIG off")


def _process(p: dict[str, Any]) -> str:
    """'pid 4242: 40.0 GiB'; NVML leaves the figure out inside some containers (no access to the pid)."""
    used = p.get("used_memory")
    return (
        f"pid {p.get('pid')}: {gib(used)} GiB" if isinstance(used, int) else f"pid {p.get('pid')}: memory not reported"
    )


@host_check("TQ107", "gpu", "GPU memory held by other processes")
def memory_in_use(ctx: HostInputs) -> Verdicts:
    return per_gpu(ctx, _memory_in_use)


def _memory_in_use(ctx: HostInputs, gpu: GPU) -> Finding:
    util = float(ctx.options.get("gpu_memory_utilization") or DEFAULT_GPU_MEMORY_UTILIZATION)
    total, used = gpu.memory_total, gpu.memory_used
    free = None if total is None or used is None else total - used
    need = None if total is None else int(total * util)
    ev = {
        "gpu": gpu.index,
        "used_gib": gib(used),
        "free_gib": gib(free),
        "total_gib": gib(total),
        "gpu_memory_utilization": util,
        "vllm_needs_free_gib": gib(need),
        "processes": [_process(p) for p in gpu.processes],
    }
    pids = ", ".join(str(p["pid"]) for p in gpu.processes)
    if free is None and not gpu.processes:
        return skipped("NVML reported no memory figures", ev, title=f"{_label(gpu)}: memory use unknown")
    elif free is not None and total and need is not None and free < need:
        return error(
            ev,
            f"stop the other processes ({pids or 'see `nvidia-smi`'}) or lower "
            f"--gpu-memory-utilization below {round(free / total, 2)}: vLLM refuses to start when "
            "free memory is below utilization x total",
            title=f"{_label(gpu)}: {gib(used)} GiB in use, vLLM at {util} needs {gib(need)} GiB free",
        )
    elif gpu.processes:
        return warn(
            ev,
            f"stop the processes using the GPU ({pids}) before serving; they compete for memory and compute",
            title=f"{_label(gpu)}: {len(gpu.processes)} other process(es) on the GPU",
        )
    else:
        return passed(ev, title=f"{_label(gpu)}: no other process holds memory ({gib(used)} GiB used)")
