"""Topology for tensor parallelism: NVLink state per link (TQ112), P2P and path per GPU pair (TQ113)."""

from __future__ import annotations

from tqdeploy.doctor.checks.host.common import no_gpu_verdict, per_gpu
from tqdeploy.doctor.registry import HostInputs, Verdicts, host_check, info, passed, skipped, warn
from tqdeploy.findings import Finding
from tqdeploy.snapshot import GPU


@host_check("TQ112", "topology", "NVLink state")
def nvlink_state(ctx: HostInputs) -> Verdicts:
    if (v := no_gpu_verdict(ctx.host)) is not None:
        return v
    gpus = ctx.host.gpus
    if len(gpus) < 2:
        return skipped("one GPU: no GPU-to-GPU traffic", {"nvlink": gpus[0].nvlink_error or "links read"})
    return per_gpu(ctx, _nvlink_state)


def _nvlink_state(ctx: HostInputs, gpu: GPU) -> Finding:
    active = [link["link"] for link in gpu.nvlinks if link.get("active")]
    down = [link["link"] for link in gpu.nvlinks if not link.get("active")]
    ev = {"gpu": gpu.index, "active_links": len(active), "inactive_links": down, "error": gpu.nvlink_error or None}
    if active and down:
        return warn(
            ev,
            "inactive NVLinks cut GPU-to-GPU bandwidth: check `nvidia-smi nvlink -s`, "
            "the NVSwitch/fabric manager service (`systemctl status nvidia-fabricmanager`) and Xid errors",
            title=f"GPU {gpu.index}: {len(down)} of {len(gpu.nvlinks)} NVLinks inactive",
        )
    elif not active:
        return warn(
            ev,
            "tensor-parallel all-reduce goes over PCIe here; prefer NVLink-connected GPUs for "
            "--tensor-parallel-size > 1, or run one replica per GPU",
            title=f"GPU {gpu.index}: no active NVLink",
        )
    else:
        return passed(ev, title=f"GPU {gpu.index}: {len(active)} NVLinks active")


@host_check("TQ113", "topology", "GPU pair topology and peer-to-peer access")
def p2p_matrix(ctx: HostInputs) -> Verdicts:
    if (v := no_gpu_verdict(ctx.host)) is not None:
        return v
    if len(ctx.host.gpus) < 2:
        return skipped("one GPU: no GPU pairs")
    pairs = [p for p in ctx.host.topology if p.get("level") is not None or p.get("p2p_read") is not None]
    if not pairs:
        return skipped("no GPU pair could be read through NVML", {"pairs": ctx.host.topology})
    matrix = {f"{p['a']}-{p['b']}": p.get("level") for p in pairs}
    no_p2p = [p for p in pairs if p.get("p2p_read") != "OK"]
    sys_pairs = [p for p in pairs if p.get("level") == "SYS"]
    ev = {
        "matrix": matrix,
        "p2p_read": {f"{p['a']}-{p['b']}": p.get("p2p_read") for p in pairs},
        "p2p_nvlink": {f"{p['a']}-{p['b']}": p.get("p2p_nvlink") for p in pairs},
    }
    if no_p2p:
        names = ", ".join(f"{p['a']}-{p['b']}" for p in no_p2p)
        return warn(
            ev,
            "without peer-to-peer access NCCL stages GPU-to-GPU traffic through host memory; check IOMMU/ACS "
            "settings in the BIOS and kernel (iommu=pt), and `nvidia-smi topo -p2p r`",
            title=f"no P2P read between GPU pair(s) {names}",
        )
    if sys_pairs:
        names = ", ".join(f"{p['a']}-{p['b']}" for p in sys_pairs)
        return info(
            ev,
            "keep a tensor-parallel group on GPUs of one CPU socket (CUDA_VISIBLE_DEVICES) where you can",
            title=f"GPU pair(s) {names} cross CPU sockets (SYS)",
        )
    return passed(ev, title="all GPU pairs have P2P access")
