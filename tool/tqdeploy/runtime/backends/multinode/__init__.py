"""The multinode runtime: a multi-node build on one host (nodes.py), picked by `up --runtime process` for a build
with multinode.json (stands_in_for / takes). The leader runs under the process runtime's supervisor, each worker
under its own, in its own group; status shows every node, and a worker gone during start-up fails `up` at once."""

from __future__ import annotations

from pathlib import Path

from tqdeploy.errors import TQError
from tqdeploy.findings import Finding
from tqdeploy.nodefile import RECORD_NAME, build_record
from tqdeploy.runtime.backends.multinode.nodes import (
    node_env,
    node_lines,
    node_status,
    remove_short_tmps,
    start_workers,
    worker_pgids,
    worker_watch,
)
from tqdeploy.runtime.backends.process import ProcessRuntime, prepared_python
from tqdeploy.runtime.backends.process.launch import serve_env, start_supervisor
from tqdeploy.runtime.base import Prepared, RuntimeFacts, Started, StopRequest
from tqdeploy.runtime.deployment import Deployment
from tqdeploy.runtime.marker import Trusted
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.stop import StopReport


class MultinodeRuntime(ProcessRuntime):
    """The process runtime (its prepare, its section: the vLLM python) with worker nodes beside the leader."""

    name = "multinode"
    stands_in_for = "process"  # registry.for_start: `up --runtime process` of a multi-node build starts this one

    @classmethod
    def takes(cls, build_dir: Path) -> bool:
        return (Path(build_dir) / RECORD_NAME).is_file()

    def start(self, dep: Deployment, prepared: Prepared, log_path: Path) -> Started:
        record = build_record(dep.build_dir)
        if record is None:
            raise TQError(f"{dep.build_dir} has no multinode.json", "build a spec with resources.nodes > 1")
        gpus = dep.spec.resources.gpus
        env = serve_env(dep.build_dir, prepared_python(prepared), dep.model_dir, dep.api_key_file, gpus)
        env = node_env(env, dep.build_dir, 0, record)
        start_workers(dep.build_dir, env, record)
        return Started.detached(start_supervisor(dep.build_dir, env, log_path))

    def other_groups(self, build_dir: Path, trusted: Trusted) -> list[int]:
        return worker_pgids(build_dir, trusted.marker, trusted.started_at)  # the workers' groups are no orphans

    def stop(self, request: StopRequest) -> StopReport:
        report = super().stop(request)
        remove_short_tmps(request.trusted.marker)
        return report

    def failed(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> Finding | None:
        """A worker gone during start-up (the leader would wait for it in torch.distributed)."""
        if trusted.started_at is None:
            return None
        return worker_watch(build_dir, trusted.marker, trusted.started_at)()

    def facts(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> RuntimeFacts:
        now = super().facts(build_dir, record, trusted)
        nodes, findings = node_status(build_dir, record, trusted.marker, trusted.started_at, now.processes)
        return RuntimeFacts(now.live, now.processes, {"nodes": nodes}, findings, node_lines(nodes))
