"""The process runtime: the rendered serve.sh with a local vLLM under the detached supervisor (launch.py).

Its keeper is the supervisor (its own session: it leads the process group that holds serve.sh's vLLM and
the EngineCore / Worker children) and records the child's pid and exit code in state.json itself. Its own
section of the state is the vLLM python it ran (ProcessState).
"""

from __future__ import annotations

import os
from pathlib import Path

from tqdeploy.buildfolder import folder
from tqdeploy.findings import Finding, Severity
from tqdeploy.runtime.backends.process.cachecontext import cache_context
from tqdeploy.runtime.backends.process.launch import (
    PYTHON_ENV,
    resolve_python,
    serve_env,
    start_supervisor,
    vllm_version,
)
from tqdeploy.runtime.backends.process.section import ProcessState, previous_python
from tqdeploy.runtime.base import Prepared, RuntimeBase, Started, StartOptions
from tqdeploy.runtime.classify import AREA
from tqdeploy.runtime.deployment import Deployment
from tqdeploy.startcache.artifact import import_for_up


def _import_caches(dep: Deployment, python: str) -> list[Finding]:
    """storage.cache_artifact into the volume serve.sh will use (VLLM_CACHE_ROOT as serve_env sets it), before
    serve.sh starts: TQ442 (startcache/artifact.py import_for_up); none when the volume already holds caches."""
    volume = Path(os.environ.get("VLLM_CACHE_ROOT") or folder(dep.build_dir).vllm_cache)
    artifact = dep.spec.storage.cache_artifact
    if not artifact:
        return []
    found = import_for_up(dep.build_dir, artifact, volume, lambda: cache_context(dep.build_dir, volume, python))
    return [found] if found else []


def version_findings(python: str, built: str) -> list[Finding]:
    """TQ424: the interpreter cannot import vLLM (an error), or has another release than the build's (a warning)."""
    found = vllm_version(python)
    if found is None:
        fix = (
            f"pass --python with the interpreter that has vLLM (e.g. .venv-vllm/bin/python) or set {PYTHON_ENV}; "
            "a vLLM installed elsewhere needs its PYTHONPATH"
        )
        title = f"{python} cannot import vllm (it did not print the probe's vLLM version line)"
        return [Finding("TQ424", Severity.ERROR, title, {"python": python}, fix, AREA)]
    if found and found.split("+")[0] != built:  # the flags were checked against the build's release
        title = f"{python} has vLLM {found}; the build's flags were validated against vLLM {built}"
        evidence = {"python": python, "vllm_version": found, "build_vllm_version": built}
        fix = f"pass --python with vLLM {built}, or set vllm.version = {found!r} in the spec and build again"
        return [Finding("TQ424", Severity.WARN, title, evidence, fix, AREA)]
    return []


class ProcessRuntime(RuntimeBase):
    name = "process"
    start_options = frozenset({"python"})
    state_type = ProcessState

    def prepare(self, dep: Deployment, options: StartOptions) -> Prepared:
        python = resolve_python(options.python, previous_python(options.previous, dep.build_dir))
        out = Prepared(backend=ProcessState(python), plan=python)
        out.findings += version_findings(python, str(dep.spec.vllm_version))
        usable = not any(f.severity == Severity.ERROR for f in out.findings)
        if usable and dep.spec.storage.cache_artifact:
            out.findings.extend(_import_caches(dep, python))
        return out

    def start(self, dep: Deployment, prepared: Prepared, log_path: Path) -> Started:
        python = prepared_python(prepared)
        gpus = dep.spec.resources.gpus
        env = serve_env(dep.build_dir, python, dep.model_dir, dep.api_key_file, gpus)
        return Started.detached(start_supervisor(dep.build_dir, env, log_path))


def prepared_python(prepared: Prepared) -> str:
    """The interpreter prepare() chose (its plan); a Prepared of another runtime is a programming error."""
    if not isinstance(prepared.plan, str):
        raise TypeError("start() was handed another runtime's Prepared")
    return prepared.plan
