"""Docker engine reachable (TQ119); NVIDIA runtime, CDI specs, NVIDIA Container Toolkit (TQ120)."""

from __future__ import annotations

from tqdeploy.doctor.registry import HostInputs, Verdicts, host_check, info, passed, skipped, warn


@host_check("TQ119", "containers", "Docker engine")
def docker_engine(ctx: HostInputs) -> Verdicts:
    d = ctx.host.docker
    if not d:
        return skipped(ctx.host.probe_errors.get("docker", "not probed"))
    ev = {
        "sdk": d.get("sdk"),
        "docker_cli": d.get("docker_cli"),
        "server_version": d.get("server_version"),
        "error": d.get("error") or None,
    }
    if d.get("reachable"):
        return passed(ev, title=f"Docker engine {d.get('server_version')} reachable")
    if d.get("sdk") is None:
        return info(
            ev,
            "only the docker runtime needs it: `pip install docker` to let tqdeploy check the engine",
            title="Docker SDK not installed: engine not checked",
        )
    return warn(
        ev,
        "start the engine (`sudo systemctl start docker`) and make its socket readable to you "
        "(docker group, or DOCKER_HOST); only the docker runtime needs it",
        title="Docker engine not reachable",
    )


@host_check("TQ120", "containers", "NVIDIA container runtime / CDI")
def nvidia_runtime(ctx: HostInputs) -> Verdicts:
    d = ctx.host.docker
    if not d:
        return skipped(ctx.host.probe_errors.get("docker", "not probed"))
    cdi_files = [f"{folder}/{name}" for folder, names in (d.get("cdi_specs") or {}).items() for name in names]
    nvidia_cdi = [f for f in cdi_files if "nvidia" in f.lower()]
    ev = {
        "runtimes": d.get("runtimes"),
        "default_runtime": d.get("default_runtime"),
        "cdi_specs": cdi_files,
        "nvidia_ctk": d.get("nvidia_ctk"),
    }
    if not d.get("reachable") and not d.get("docker_cli"):
        return skipped("no Docker engine or CLI here", ev)
    fix = (
        "install the NVIDIA Container Toolkit, then `sudo nvidia-ctk runtime configure --runtime=docker && "
        "sudo systemctl restart docker` (or generate CDI specs: `sudo nvidia-ctk cdi generate "
        "--output=/etc/cdi/nvidia.yaml`)"
    )
    if d.get("reachable"):
        if "nvidia" in (d.get("runtimes") or []) or nvidia_cdi:
            return passed(ev, title="Docker can hand GPUs to containers (nvidia runtime or CDI)")
        return warn(ev, fix, title="Docker has no NVIDIA runtime and no NVIDIA CDI spec: `--gpus` will fail")
    if nvidia_cdi or d.get("nvidia_ctk"):
        return info(
            ev,
            "the engine was not reachable; re-run doctor where it is to confirm GPU containers work",
            title="NVIDIA Container Toolkit present, engine not checked",
        )
    return warn(ev, fix, title="no NVIDIA Container Toolkit (nvidia-ctk) and no NVIDIA CDI spec")
