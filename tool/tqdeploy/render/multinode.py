"""What a multi-node build's nodes need to agree on, computed once: multinode.sh.j2's values and multinode.json.

multinode.json is the build's own record of them (versions, ports, interface, parallel layout) that
`tqdeploy doctor`, `lint` and the multi-node runtime read back instead of parsing the shell script.
"""

from __future__ import annotations

import json
from typing import Any

from tqdeploy.deployspec.model import Spec
from tqdeploy.nodefile import EXIT_CONFIG, EXIT_VERSION, RECORD_SCHEMA  # what every node agrees on

# vLLM 0.32.0 vllm/config/parallel.py ParallelConfig.master_port: the leader's torch.distributed port.
MASTER_PORT = 29501
# The pod's network in Kubernetes; `tqdeploy up` on one host sets lo (multinode runtime).
POD_IFNAME = "eth0"


def multinode_context(spec: Spec) -> dict[str, Any] | None:
    if not spec.multi_node:
        return None
    res = spec.resources
    return {
        "schema": RECORD_SCHEMA,
        "backend": "mp",  # vLLM's own --nnodes mode; see templates/multinode.sh.j2 for why not Ray
        "nodes": res.nodes,
        "vllm_version": spec.vllm_version,
        "ray_version": None,  # no node runs Ray
        "api_port": spec.server.port,
        "master_port": MASTER_PORT,
        "socket_ifname": POD_IFNAME,
        "tensor_parallel_size": spec.vllm.tensor_parallel_size,
        "pipeline_parallel_size": res.nodes,
        "gpus_per_node": len(res.gpus) if spec.variant == "gpu" else 0,
        "variant": spec.variant,
        "exit_config": EXIT_CONFIG,
        "exit_version": EXIT_VERSION,
    }


def record_text(ctx: dict[str, Any] | None) -> str:
    """multinode.json's text (templates/multinode.json.j2 writes it as is)."""
    return json.dumps(ctx, indent=2, sort_keys=True) if ctx else ""
