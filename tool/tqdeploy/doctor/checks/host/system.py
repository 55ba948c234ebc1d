"""Host OS checks: /dev/shm (TQ114), container (TQ115), RLIMIT_MEMLOCK (TQ116), RLIMIT_NOFILE (TQ117), WSL2 (TQ118)."""

from __future__ import annotations

import re

from tqdeploy.doctor.checks.host.common import MIB, mib
from tqdeploy.doctor.registry import HostInputs, Verdicts, error, host_check, info, passed, skipped, warn

# vLLM 0.32.0 puts the scheduler-to-worker broadcast ring in /dev/shm when it runs worker processes
# (tensor parallelism): VLLM_MQ_MAX_CHUNK_BYTES_MB (16, vllm/envs.py) x max_chunks (10, MessageQueue in
# vllm/distributed/device_communicators/shm_broadcast.py) = 160 MiB, before NCCL's own shared-memory
# buffers. Docker's default /dev/shm is 64 MiB (docs/facts.md): too small. With one GPU (world size 1) vLLM
# picks the in-process "uni" executor and no ring (vllm/config/parallel.py, distributed_executor_backend),
# so a small /dev/shm is a warning there and an error where tensor parallelism is possible.
VLLM_MQ_SHM_BYTES = 16 * MIB * 10
DOCKER_DEFAULT_SHM = 64 * MIB
# vLLM raises its soft RLIMIT_NOFILE to 65535 and warns when the hard limit forbids it
# (vllm/utils/system_utils.py, set_ulimit).
VLLM_NOFILE_TARGET = 65535
# First WSL2 kernel with (limited) pinned-memory support for CUDA; below it vLLM turns pinned memory off,
# at or above it pinned memory stays off unless VLLM_WSL2_ENABLE_PIN_MEMORY=1 (vLLM 0.32.0:
# vllm/platforms/cuda.py CudaPlatform.is_pin_memory_available, vllm/envs.py).
WSL_PINNED_MIN_KERNEL = (4, 19, 121)


def _shm_fix(in_container: bool) -> str:
    if in_container:
        return "restart the container with `--ipc=host` (or a larger `--shm-size`)"
    return "enlarge the tmpfs: `sudo mount -o remount,size=<N>G /dev/shm` (and in /etc/fstab)"


@host_check("TQ114", "system", "/dev/shm size")
def shm_size(ctx: HostInputs) -> Verdicts:
    shm = ctx.host.shm
    if not shm:
        return skipped(ctx.host.probe_errors.get("shm", "/dev/shm not probed"))
    in_container = bool(ctx.host.container.get("in_container"))
    free, total = shm.get("free_bytes"), shm.get("total_bytes")
    ev = {
        "path": shm.get("path"),
        "total_mib": mib(total),
        "free_mib": mib(free),
        "in_container": in_container,
        "vllm_broadcast_ring_mib": mib(VLLM_MQ_SHM_BYTES),
    }
    if free is not None and free < VLLM_MQ_SHM_BYTES:
        note = " (Docker's default)" if total is not None and total <= DOCKER_DEFAULT_SHM else ""
        title = f"/dev/shm has {mib(free)} MiB free{note}: vLLM's worker broadcast ring alone needs 160 MiB"
        if len(ctx.host.gpus) == 1:
            return warn(
                ev,
                _shm_fix(in_container) + "; one GPU serves without worker processes, but "
                "--tensor-parallel-size > 1 needs it",
                title=title + " with tensor parallelism",
            )
        return error(ev, _shm_fix(in_container), title=title)
    return passed(ev, title=f"/dev/shm {mib(total)} MiB ({mib(free)} MiB free)")


@host_check("TQ115", "system", "container detection")
def container(ctx: HostInputs) -> Verdicts:
    c = ctx.host.container
    if not c:
        return skipped(ctx.host.probe_errors.get("container", "not probed"))
    if c.get("in_container"):
        return info(
            {"markers": c.get("markers")},
            "run vLLM containers with `--gpus all --ipc=host` (or `--shm-size`); GPU and PCIe readings "
            "inside a container may be partial",
            title="running inside a container",
        )
    return passed({"markers": []}, title="not in a container")


def _fmt_limit(v: int | None) -> int | str | None:
    return "unlimited" if v == -1 else v


@host_check("TQ116", "system", "locked-memory limit (RDMA)")
def memlock(ctx: HostInputs) -> Verdicts:
    lim = ctx.host.limits
    if not lim:
        return skipped(ctx.host.probe_errors.get("limits", "not probed"))
    ib = lim.get("infiniband") or []
    ev = {
        "memlock_soft": _fmt_limit(lim.get("memlock_soft")),
        "memlock_hard": _fmt_limit(lim.get("memlock_hard")),
        "infiniband_devices": ib,
    }
    if not ib:
        return passed(ev, title="no RDMA devices: the locked-memory limit does not matter here")
    if lim.get("memlock_soft") != -1:
        return warn(
            ev,
            "RDMA (NCCL over InfiniBand/RoCE) registers pinned memory: set `ulimit -l unlimited` "
            "(systemd: LimitMEMLOCK=infinity; docker: `--ulimit memlock=-1`)",
            title=f"RLIMIT_MEMLOCK {lim.get('memlock_soft')} bytes with RDMA devices present",
        )
    return passed(ev, title="RLIMIT_MEMLOCK unlimited with RDMA devices present")


@host_check("TQ117", "system", "open-files limit")
def nofile(ctx: HostInputs) -> Verdicts:
    lim = ctx.host.limits
    if not lim:
        return skipped(ctx.host.probe_errors.get("limits", "not probed"))
    hard = lim.get("nofile_hard")
    ev = {
        "nofile_soft": _fmt_limit(lim.get("nofile_soft")),
        "nofile_hard": _fmt_limit(hard),
        "vllm_target_soft": VLLM_NOFILE_TARGET,
    }
    if hard is None:
        return skipped("open-files limit not recorded", ev)
    if hard != -1 and hard < VLLM_NOFILE_TARGET:
        return warn(
            ev,
            f"raise the hard limit to >= {VLLM_NOFILE_TARGET} (`ulimit -Hn`, systemd LimitNOFILE=, "
            "docker `--ulimit nofile=65535:65535`); under load vLLM can hit 'Too many open files'",
            title=f"RLIMIT_NOFILE hard limit {hard} < {VLLM_NOFILE_TARGET}: vLLM cannot raise its soft limit",
        )
    return passed(ev, title=f"RLIMIT_NOFILE hard limit {_fmt_limit(hard)}")


def _kernel_version(release: str) -> tuple[int, ...]:
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", release)
    return tuple(int(x) for x in m.groups()) if m else ()


@host_check("TQ118", "system", "WSL2")
def wsl(ctx: HostInputs) -> Verdicts:
    k = ctx.host.kernel
    if not k:
        return skipped(ctx.host.probe_errors.get("kernel", "not probed"))
    ev = {"kernel": k.get("release"), "wsl": k.get("wsl")}
    if not k.get("wsl"):
        return passed(ev, title="not WSL")
    version = _kernel_version(k.get("release", ""))
    if not version or version < WSL_PINNED_MIN_KERNEL:
        return warn(
            ev,
            "update WSL (`wsl --update`) to a kernel >= 4.19.121: below it vLLM disables pinned memory "
            "and host-to-GPU copies run at pageable speed",
            title="WSL2 kernel without pinned-memory support for CUDA",
        )
    return info(
        ev,
        "vLLM leaves pinned memory off under WSL2 unless VLLM_WSL2_ENABLE_PIN_MEMORY=1 (host-to-GPU "
        "copies run at pageable speed without it); serve production loads on native Linux",
        title="running under WSL2",
    )
