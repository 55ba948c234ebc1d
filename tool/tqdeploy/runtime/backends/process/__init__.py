"""The process runtime: the rendered serve.sh with a local vLLM under the detached supervisor (runtime/process.py).

Its keeper is the supervisor (its own session: it leads the process group that holds serve.sh's vLLM and
the EngineCore / Worker children) and records the child's pid and exit code in state.json itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.runtime import procs, state
from tqdeploy.runtime.base import Prepared, RuntimeFacts, Started, StartOptions, StopRequest, Unavailable
from tqdeploy.runtime.classify import AREA
from tqdeploy.runtime.deployment import Deployment
from tqdeploy.runtime.marker import Trusted
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.stop import StopReport, stop_deployment


def preflight_python(python: str | None, build_dir: Path) -> str:
    """--python, $TQDEPLOY_VLLM_PYTHON, or the interpreter this folder's own last `up` recorded."""
    from tqdeploy.runtime.process import resolve_python

    try:
        record = state.read_record(build_dir)
    except TQError:
        record = None
    # Only a state this folder's own `up` wrote names the interpreter to run (a copied one is another's).
    own = record is not None and record.marker == state.deployment_marker(build_dir)
    return resolve_python(python, record.python if own and record is not None else None)


def keeper_alive(record: StateRecord, trusted: Trusted) -> bool:
    """The supervisor (or log pump) or the server of this run is alive and provably the deployment's."""
    return any(procs.owned(pid, trusted.marker, trusted.started_at) for pid in (record.supervisor_pid, record.pid))


def _import_caches(dep: Deployment, python: str) -> list[Finding]:
    """storage.cache_artifact into the volume serve.sh will use (VLLM_CACHE_ROOT as serve_env sets it), before
    serve.sh starts: TQ442 (startcache/artifact.py import_for_up); none when the volume already holds caches."""
    import os

    from tqdeploy.buildfolder import folder
    from tqdeploy.runtime.cachecontext import cache_context
    from tqdeploy.startcache.artifact import import_for_up

    volume = Path(os.environ.get("VLLM_CACHE_ROOT") or folder(dep.build_dir).vllm_cache)
    artifact = dep.spec["storage"]["cache_artifact"]  # type: ignore[index]
    found = import_for_up(dep.build_dir, artifact, volume, lambda: cache_context(dep.build_dir, volume, python))
    return [found] if found else []


class ProcessRuntime:
    name = "process"
    start_options = frozenset({"python"})

    def prepare(self, dep: Deployment, options: StartOptions) -> Prepared:
        from tqdeploy.runtime.process import PYTHON_ENV, vllm_version

        python = preflight_python(options.python, dep.build_dir)
        out = Prepared(record={"python": python}, data={"python": python})
        found = vllm_version(python)
        built = str(dep.spec.vllm_version)  # type: ignore[attr-defined]
        if found and found.split("+")[0] != built:  # the flags were checked against the build's release
            out.findings.append(
                Finding(
                    "TQ424",
                    Severity.WARN,
                    f"{python} has vLLM {found}; the build's flags were validated against vLLM {built}",
                    {"python": python, "vllm_version": found, "build_vllm_version": built},
                    f"pass --python with vLLM {built}, or set vllm.version = {found!r} in the spec and build again",
                    AREA,
                )
            )
        if found is None:
            out.findings.append(
                Finding(
                    "TQ424",
                    Severity.ERROR,
                    f"{python} cannot import vllm (it did not print the probe's vLLM version line)",
                    {"python": python},
                    f"pass --python with the interpreter that has vLLM (e.g. .venv-vllm/bin/python) or set "
                    f"{PYTHON_ENV}; a vLLM installed elsewhere needs its PYTHONPATH",
                    AREA,
                )
            )
        elif dep.spec["storage"]["cache_artifact"]:  # type: ignore[index]
            out.findings.extend(_import_caches(dep, python))
        return out

    def start(self, dep: Deployment, prepared: Prepared, log_path: Path) -> Started:
        from tqdeploy.runtime.process import serve_env, start_supervisor

        gpus = dep.spec["resources"]["gpus"]  # type: ignore[index]
        env = serve_env(dep.build_dir, prepared.data["python"], dep.model_dir, dep.api_key_file, gpus)
        sup = start_supervisor(dep.build_dir, env, log_path)
        return Started(sup, sup.pid)

    def stop(self, request: StopRequest, groups: list[int] | None = None) -> StopReport:
        """groups: more process groups of the deployment (a multi-node build's workers), stopped with it."""
        r = request.record
        return stop_deployment(
            request.build_dir,
            r.pgid,
            request.grace,
            server_pid=r.pid,
            host=request.host,
            port=request.port,
            gpu_baseline=request.gpu_baseline,
            trusted=request.trusted,
            groups=groups,
        )

    def is_live(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> bool:
        return keeper_alive(record, trusted)

    def facts(self, build_dir: Path, record: StateRecord, trusted: Trusted) -> RuntimeFacts:
        # By the deployment's own processes (marker, start time), not by state.json's pids.
        members = procs.deployment_procs(trusted.marker, trusted.started_at)
        return RuntimeFacts(bool(members), members)

    def inspect(self, build_dir: Path, record: StateRecord, secret: Callable[[str], str]) -> dict[str, Any]:
        # Its processes and logs are the bundle's own collectors (every runtime's carry the marker): nothing more.
        raise Unavailable("the process runtime has nothing to record beyond the processes and logs")

    def logs(self, build_dir: Path) -> Path:
        return state.current_log(build_dir)

    @classmethod
    def adopts(cls, build_dir: Path) -> bool:
        return False  # the default: `down --force` falls back to it (its marker sweep finds every runtime's)
