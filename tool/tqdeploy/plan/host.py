"""Which GPUs to plan for: a GPU named from the catalog, a recorded snapshot, or this host (live probe)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tqdeploy.errors import TQError
from tqdeploy.findings import Severity
from tqdeploy.model.compat import problem
from tqdeploy.plan.gpus import gpu_by_name
from tqdeploy.probe import collect
from tqdeploy.snapshot import HostSnapshot
from tqdeploy.units import GiB as gib

if TYPE_CHECKING:
    from tqdeploy.findings import Finding


@dataclass
class PlanHost:
    name: str
    memory_bytes: int  # per GPU (the smallest when they differ: vLLM sizes every rank alike)
    count: int
    compute_capability: tuple[int, int] | None
    source: str
    memory_used_bytes: int | None = None  # the most any planned GPU has in use already (snapshot / live)


def held_memory_problem(host: PlanHost, gpu_memory_utilization: float) -> Finding | None:
    """An error when other processes hold more of a GPU than vLLM leaves free: vLLM 0.32.0 refuses to start
    when free memory is under gpu_memory_utilization x total ("Free memory on device ... is less than desired
    GPU memory utilization", vllm/v1/worker/utils.py), so a plan of the full budget would not be true."""
    used = host.memory_used_bytes
    if not used:
        return None

    free = host.memory_bytes - used
    wanted = gpu_memory_utilization * host.memory_bytes
    if free >= wanted:
        return None
    fits = max(0.0, free / host.memory_bytes - 0.01)

    return problem(
        Severity.ERROR,
        "held-memory",
        f"{used / gib:.1f} GiB of a GPU on {host.source} is already in use by other processes: "
        f"{free / gib:.1f} GiB is free, under the {wanted / gib:.1f} GiB that gpu_memory_utilization "
        f"{gpu_memory_utilization:g} asks, so vLLM refuses to start",
        f"stop what holds that memory (nvidia-smi lists it), or plan with --gpu-memory-utilization {fits:.2f}",
    )


def from_snapshot(snap: HostSnapshot, source: str, gpus: int | None = None) -> PlanHost:
    known = [g for g in snap.gpus if g.memory_total]
    if not known:
        raise TQError(
            f"{source} lists no GPU with a memory total",
            "record the snapshot on the GPU host, or plan by name: --gpu H200 --gpus N",
        )
    count = len(known)
    if gpus is not None:
        if gpus > count:
            raise TQError(f"--gpus {gpus} but {source} has {count} GPU(s)", f"pass --gpus {count} or fewer")
        count = gpus
    # every GPU in `known` has a memory total (the `or 0` is for the type only)
    used = sorted(known, key=lambda g: g.memory_total or 0)[:count] if gpus else known
    ccs = [(g.compute_capability[0], g.compute_capability[1]) for g in used if g.compute_capability]
    held = [g.memory_used for g in used if isinstance(g.memory_used, int)]
    return PlanHost(
        name=used[0].name,
        memory_bytes=min(g.memory_total or 0 for g in used),
        count=count,
        compute_capability=min(ccs) if ccs else None,
        source=source,
        memory_used_bytes=max(held) if held else None,
    )


def resolve_host(
    *,
    snapshot: Path | None = None,
    gpu: str | None = None,
    gpus: int | None = None,
    read_snapshot: Callable[[Path], HostSnapshot] | None = None,
) -> PlanHost:
    """read_snapshot: how --snapshot FILE is read (the command passes bundle.replay.load_host_snapshot, which
    also replays a bundle); HostSnapshot.load (JSON only) by default."""
    if gpu and snapshot:
        raise TQError("--gpu and --snapshot both name the hardware", "pass one of them")
    if gpu:
        entry = gpu_by_name(gpu)
        return PlanHost(
            entry["name"],
            int(entry["memory_bytes"]),
            gpus or 1,
            tuple(entry["compute_capability"]),
            f"catalog ({entry['key']})",
        )
    if snapshot:
        return from_snapshot((read_snapshot or HostSnapshot.load)(snapshot), f"snapshot {snapshot}", gpus)

    snap = collect(offline=True)
    if not [g for g in snap.gpus if g.memory_total]:
        why = snap.probe_errors.get("nvml", "no GPU found")
        raise TQError(
            f"no GPU on this host to plan for ({why})",
            "plan by name (--gpu H200 --gpus 2) or replay a snapshot (--snapshot FILE)",
        )
    return from_snapshot(snap, "this host", gpus)
