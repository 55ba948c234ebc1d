"""Probes: the only code that reads the machine. ``collect()`` fills one HostSnapshot.

Each probe runs on its own; a probe that fails records a one-line reason in
``snapshot.probe_errors[name]`` and leaves its section empty, so the checks can say what is unknown
instead of crashing. Roots are parameters (``ProbeRoots``) so tests run against fake trees.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from tqdeploy import __version__
from tqdeploy.probe import hostenv, pci, system
from tqdeploy.probe.cudalibs import probe_cuda_libs
from tqdeploy.probe.docker_engine import probe_docker
from tqdeploy.probe.nvml import NoDriver, NVMLAdapter, init_nvml, load_adapter, probe_nvml
from tqdeploy.probe.pci import probe_pci_device, sysfs_bdf
from tqdeploy.probe.topology import probe_topology
from tqdeploy.snapshot import HostSnapshot


@dataclass
class ProbeRoots:
    root: Path = Path("/")  # for /.dockerenv, /run/.containerenv, /etc/cdi
    sys: Path = Path("/sys")
    proc: Path = Path("/proc")
    shm: Path = Path("/dev/shm")
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")[:300]


def collect(
    roots: ProbeRoots | None = None,
    nvml: NVMLAdapter | None = None,
    offline: bool = False,
    docker_client_factory: Callable[[], Any] | None = None,
) -> HostSnapshot:
    """Probe this host. ``nvml``: an NVML adapter (pynvml or a stand-in); None loads pynvml."""
    roots = roots or ProbeRoots()
    snap = HostSnapshot(recorded_at=datetime.now(UTC).isoformat(timespec="seconds"), tool_version=__version__)

    def run(name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        try:
            return fn()
        except Exception as exc:
            snap.probe_errors[name] = _one_line(exc)
            return None
        finally:
            snap.probe_seconds[name] = round(time.perf_counter() - t0, 4)

    run("nvml", lambda: _probe_gpus(snap, nvml))
    for gpu in snap.gpus:
        if gpu.pci_bus_id:
            bdf = sysfs_bdf(gpu.pci_bus_id)
            snap.pci[bdf] = run(f"pci:{bdf}", partial(probe_pci_device, roots.sys, bdf)) or {}

    snap.aspm_policy = run("aspm", lambda: pci.probe_aspm_policy(roots.sys))
    snap.shm = run("shm", lambda: system.probe_shm(roots.shm)) or {}
    snap.container = run("container", lambda: system.probe_container(roots.root, roots.proc)) or {}
    snap.kernel = run("kernel", lambda: system.probe_kernel(roots.proc)) or {}
    snap.limits = run("limits", lambda: system.probe_limits(roots.sys)) or {}
    snap.docker = run("docker", lambda: _probe_docker(roots, docker_client_factory)) or {}
    snap.cuda_libs = run("cuda_libs", _probe_cuda_libs) or {}

    snap.env = run("env", lambda: hostenv.probe_env(roots.env)) or {}
    if snap.env.get("hf_cache"):
        snap.disk = run("disk", lambda: hostenv.probe_disk(Path(snap.env["hf_cache"]))) or {}
    endpoint = roots.env.get("HF_ENDPOINT")
    if endpoint and not offline:
        snap.mirror = run("mirror", lambda: hostenv.probe_mirror(endpoint, roots.env)) or {}
    return snap


def _probe_gpus(snap: HostSnapshot, nvml: NVMLAdapter | None) -> None:
    try:
        nv = nvml if nvml is not None else load_adapter()
        init_nvml(nv)
    except NoDriver as exc:
        snap.driver = {"present": False, "error": str(exc)}
        raise
    try:  # NVML started: a driver is there, whatever fails below
        snap.driver = {"present": True}
        snap.driver, snap.gpus, handles = probe_nvml(nv)
        snap.topology = probe_topology(nv, handles, snap.gpus)
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:
            pass


def _probe_docker(roots: ProbeRoots, factory: Callable[[], Any] | None) -> dict[str, Any]:
    return probe_docker(roots.root, client_factory=factory)


def _probe_cuda_libs() -> dict[str, Any]:
    return probe_cuda_libs()
