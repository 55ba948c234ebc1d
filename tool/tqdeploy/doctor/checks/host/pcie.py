"""PCIe link width and generation (NVML and sysfs), AER error counters, ASPM policy.

A GPU drops its link *generation* at idle to save power and raises it under load, so a low current
generation at idle is normal: it is judged against the link's maximum only when the link cannot
reach the GPU's own maximum (slot, riser or BIOS limit). Width does not change with load, so a
narrow link at idle is a real fault (a slot wired x8, a bad riser, a badly seated card).
"""

from __future__ import annotations

from typing import Any

from tqdeploy.doctor.checks.host.common import per_gpu
from tqdeploy.doctor.registry import HostInputs, Verdicts, error, host_check, info, passed, skipped, warn
from tqdeploy.findings import Finding
from tqdeploy.probe.pci import sysfs_bdf
from tqdeploy.snapshot import GPU, HostSnapshot

# The last line of each aer_dev_* file (Linux drivers/pci/pcie/aer.c)
AER_TOTAL_KEYS = {"correctable": "TOTAL_ERR_COR", "nonfatal": "TOTAL_ERR_NONFATAL", "fatal": "TOTAL_ERR_FATAL"}


def _label(gpu: GPU) -> str:
    return f"GPU {gpu.index}"


def _sysfs(host: HostSnapshot, gpu: GPU) -> dict[str, Any]:
    return host.pci.get(sysfs_bdf(gpu.pci_bus_id), {}) if gpu.pci_bus_id else {}


@host_check("TQ108", "pcie", "PCIe link width")
def link_width(ctx: HostInputs) -> Verdicts:
    return per_gpu(ctx, _link_width)


def _link_width(ctx: HostInputs, gpu: GPU) -> Finding:
    sysfs = _sysfs(ctx.host, gpu)
    cur = gpu.pcie.get("width_cur") or sysfs.get("current_link_width")
    top = gpu.pcie.get("width_max") or sysfs.get("max_link_width")
    ev = {
        "gpu": gpu.index,
        "bus_id": gpu.pci_bus_id,
        "width_current": cur,
        "width_max": top,
        "sysfs_current": sysfs.get("current_link_width"),
        "sysfs_max": sysfs.get("max_link_width"),
    }
    if not cur or not top:
        return skipped("link width not reported by NVML or sysfs", ev, title=f"{_label(gpu)}: PCIe width unknown")
    elif cur < top:
        return warn(
            ev,
            "reseat the card or move it to a slot wired x16, check risers/retimers and the BIOS "
            "slot bifurcation setting; host-to-GPU copies (weight loading) run at the reduced width",
            title=f"{_label(gpu)}: PCIe link x{cur}, capable of x{top}",
        )
    else:
        return passed(ev, title=f"{_label(gpu)}: PCIe link x{cur} (max x{top})")


@host_check("TQ109", "pcie", "PCIe link generation")
def link_generation(ctx: HostInputs) -> Verdicts:
    return per_gpu(ctx, _link_generation)


def _link_generation(ctx: HostInputs, gpu: GPU) -> Finding:
    sysfs = _sysfs(ctx.host, gpu)
    cur = gpu.pcie.get("gen_cur") or sysfs.get("current_gen")
    link_max = gpu.pcie.get("gen_max") or sysfs.get("max_gen")
    gpu_max = gpu.pcie.get("gen_gpu_max")
    ev = {
        "gpu": gpu.index,
        "gen_current": cur,
        "gen_link_max": link_max,
        "gen_gpu_max": gpu_max,
        "sysfs_current_speed": sysfs.get("current_link_speed"),
        "sysfs_max_speed": sysfs.get("max_link_speed"),
        "note": "GPUs lower the link generation at idle; current gen is judged only under load",
    }
    if not cur or not link_max:
        return skipped(
            "link generation not reported by NVML or sysfs", ev, title=f"{_label(gpu)}: PCIe generation unknown"
        )
    elif gpu_max and link_max < gpu_max:
        return warn(
            ev,
            f"the slot or BIOS caps the link at gen {link_max} while the GPU supports gen {gpu_max}: "
            "check the BIOS PCIe speed setting, risers and the slot's generation",
            title=f"{_label(gpu)}: PCIe link limited to gen {link_max} (GPU supports gen {gpu_max})",
        )
    elif cur < link_max:
        return info(
            ev,
            "re-check while the GPU is busy (`nvidia-smi -q -d PCIE` during a load); "
            "a link that stays below its maximum under load is a fault",
            title=f"{_label(gpu)}: PCIe gen {cur} now, gen {link_max} possible (normal at idle)",
        )
    else:
        return passed(ev, title=f"{_label(gpu)}: PCIe gen {cur} (max gen {link_max})")


@host_check("TQ110", "pcie", "PCIe AER error counters")
def aer_counters(ctx: HostInputs) -> Verdicts:
    return per_gpu(ctx, _aer_counters)


def _aer_counters(ctx: HostInputs, gpu: GPU) -> Finding:
    aer = _sysfs(ctx.host, gpu).get("aer")
    if not aer:
        return skipped(
            "the kernel exposes no AER counters for this device (aer_dev_* absent)",
            {"gpu": gpu.index},
            title=f"{_label(gpu)}: no AER counters",
        )
    totals = {kind: counts.get(AER_TOTAL_KEYS[kind], sum(counts.values())) for kind, counts in aer.items()}
    nonzero = {
        kind: {k: v for k, v in counts.items() if v and not k.startswith("TOTAL")} for kind, counts in aer.items()
    }
    ev = {"gpu": gpu.index, "totals": totals, "nonzero": {k: v for k, v in nonzero.items() if v}}
    fix = (
        "check the kernel log (`journalctl -k | grep -i aer`), reseat the card and its risers; "
        "errors that keep rising point at the slot, riser or card"
    )
    if totals.get("fatal") or totals.get("nonfatal"):
        return error(ev, fix, title=f"{_label(gpu)}: uncorrectable PCIe errors recorded")
    if totals.get("correctable"):
        return warn(ev, fix, title=f"{_label(gpu)}: {totals['correctable']} correctable PCIe errors recorded")
    return passed(ev, title=f"{_label(gpu)}: no PCIe errors recorded")


@host_check("TQ111", "pcie", "PCIe ASPM power saving")
def aspm(ctx: HostInputs) -> Verdicts:
    policy = ctx.host.aspm_policy
    l1 = {bdf: dev.get("l1_aspm") for bdf, dev in ctx.host.pci.items() if dev.get("l1_aspm") is not None}
    ev = {"policy": policy, "l1_aspm_per_device": l1}
    fix = (
        "set `echo performance | sudo tee /sys/module/pcie_aspm/parameters/policy` "
        "(boot: pcie_aspm.policy=performance) or disable ASPM for the GPU's link "
        "(`echo 0 | sudo tee /sys/bus/pci/devices/<BDF>/link/l1_aspm`)"
    )
    if policy is None and not l1:
        return skipped("no ASPM policy file and no per-device link/ files", ev)
    if policy in ("powersave", "powersupersave"):
        return warn(ev, fix, title=f"ASPM policy {policy}: PCIe links enter low-power states, adding latency")
    on = sorted(bdf for bdf, enabled in l1.items() if enabled)
    if on:
        return warn(ev, fix, title=f"ASPM L1 enabled on GPU link(s) {', '.join(on)}")
    return passed(ev, title=f"ASPM policy {policy or 'not exposed'}, L1 off on GPU links")
