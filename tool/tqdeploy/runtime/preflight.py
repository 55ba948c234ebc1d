"""Checks before anything loads: build drift, the doctor, port, model, key file, free GPU memory.

Each problem is a finding; errors block `up` unless --force (a taken port, a missing model or key file
block even then: vLLM would only fail later, after loading weights).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdeploy.buildfolder import folder, own_dir, verify
from tqdeploy.findings import Finding, Severity
from tqdeploy.fsutil import exclusive_dir
from tqdeploy.keyfile import inspect_key_file
from tqdeploy.net.ports import port_free
from tqdeploy.runtime import gpu
from tqdeploy.runtime.classify import AREA
from tqdeploy.runtime.deployment import Deployment
from tqdeploy.runtime.procs import read_proc
from tqdeploy.runtime.startrace import start_race_finding, starting_neighbours

# Doctor areas that do not apply to the CPU build (no GPU, driver or CUDA libraries needed).
GPU_ONLY_AREAS = {"driver", "gpu", "pcie", "topology", "libraries"}
HARD = {"TQ401", "TQ412", "TQ413"}
# The doctor's findings on this host for the build's vLLM version and what the build asks of vLLM (serving_settings).
# The command layer passes it in (`tqdeploy up` runs tqdeploy.doctor offline), so runtime stands below doctor in
# the package layers and never imports it.
HostDoctor = Callable[[str, Mapping[str, Any]], Sequence[Finding]]
# The spec's [vllm] keys the doctor's checks weigh (TQ107: free memory against gpu_memory_utilization; the KV-cache
# and parallelism checks). Without them `up` judged every build at vLLM's defaults: on the H200 a build at 0.45 next
# to another server holding 64 GiB was refused ("vLLM at 0.92 needs 129.17 GiB free") though vLLM would start.
SERVING_KEYS = ("tensor_parallel_size", "max_model_len", "kv_cache_dtype", "gpu_memory_utilization", "dtype")


class StartBusy(Exception):
    """Another `up` of this build holds its start lock."""


@contextmanager
def start_lock(build_dir: Path) -> Iterator[None]:
    """One `up` at a time per build: an flock on BUILD/.tqdeploy held from the running check until the
    start is over (ready, failed or stopped), so a second `up` is refused at once instead of racing for the
    port. The supervisor does not inherit it (close_fds); the lock ends with the `up` process."""

    directory = own_dir(build_dir, folder(build_dir).state_dir)
    with exclusive_dir(directory, StartBusy()):
        yield


def _f(id_: str, sev: Severity, title: str, evidence: dict[str, Any], fix: str) -> Finding:
    return Finding(id_, sev, title, evidence, fix, AREA)


def drift_finding(dep: Deployment) -> Finding | None:

    drift = verify(dep.build_dir)
    if not (drift["modified"] or drift["missing"]):
        return None
    return _f(
        "TQ418",
        Severity.ERROR,
        "the build directory no longer matches its lock",
        drift,
        f"run `tqdeploy build --out {dep.build_dir}` again (or `up --force` to start it as it is)",
    )


def serving_settings(dep: Deployment) -> dict[str, Any]:
    """What the build asks of vLLM, for the doctor: the spec's SERVING_KEYS that are set."""
    v = dep.spec.vllm.to_dict()
    return {k: v[k] for k in SERVING_KEYS if v.get(k) is not None}


def doctor_summary(dep: Deployment, doctor: HostDoctor) -> tuple[Finding, str]:
    """One finding and one summary line for the doctor's verdict on this host and this build's settings."""
    try:
        findings = doctor(dep.spec.vllm_version, serving_settings(dep))
    except Exception as err:  # an unknown vLLM version, a probe that broke: not a reason to refuse
        return _f(
            "TQ417",
            Severity.WARN,
            "the doctor could not run",
            {"error": str(err)[:300]},
            "run `tqdeploy doctor` to see why",
        ), "doctor: could not run"
    relevant = [f for f in findings if not (dep.variant == "cpu" and f.area in GPU_ONLY_AREAS)]
    errors = [f for f in relevant if f.severity == Severity.ERROR]
    warns = [f for f in relevant if f.severity == Severity.WARN]
    line = f"doctor: {len(errors)} error(s), {len(warns)} warning(s)"
    if errors:
        line += " (" + ", ".join(f"{f.id} {f.title}" for f in errors[:3]) + ")"
    sev = Severity.ERROR if errors else Severity.OK
    fix = "fix them (`tqdeploy doctor`, `tqdeploy explain ID`) or start anyway with --force" if errors else ""
    return _f("TQ417", sev, line, {"errors": [f.id for f in errors], "warnings": [f.id for f in warns]}, fix), line


def host_findings(dep: Deployment) -> list[Finding]:
    out = []
    if not port_free(dep.host, dep.port):
        out.append(
            _f(
                "TQ401",
                Severity.ERROR,
                f"port {dep.port} on {dep.host} is already in use",
                {"port": dep.port},
                f"stop what listens there (`ss -ltnp 'sport = :{dep.port}'`) or set server.port in tqdeploy.toml "
                "and build again",
            )
        )
    if not (dep.model_dir / "config.json").is_file():
        how = "./download.sh" if folder(dep.build_dir).download_sh.is_file() else "`tqdeploy download`"
        out.append(
            _f(
                "TQ412",
                Severity.ERROR,
                f"model missing: {dep.model_dir} has no config.json",
                {"model_dir": str(dep.model_dir)},
                f"run {how} in {dep.build_dir} (or put the model at {dep.model_dir}, or set TQ_MODEL_DIR)",
            )
        )
    if dep.api_key_file is not None:
        out += key_file_findings(dep.api_key_file)
    out += gpu_findings(dep)
    return out


def key_file_findings(path: Path) -> list[Finding]:
    """TQ413: an error (blocks even with --force) when the key file is missing, empty, binary, a folder or
    FIFO (serve.sh would exit 67, or vLLM start with a wrong key); a warning when group or others can read it."""

    facts = inspect_key_file(path)
    evidence = {"api_key_file": str(path), "present": facts.problem is None, "mode": facts.mode}
    if facts.problem is not None:
        fix = f"{facts.fix}; write the key into that file (chmod 600): it is never put on the command line"
        return [_f("TQ413", Severity.ERROR, facts.problem, evidence, fix)]
    if facts.too_open:
        title = f"API key file {path} has mode {facts.mode}: others on this host can read the key"
        return [_f("TQ413", Severity.WARN, title, evidence, facts.fix)]
    return []


def gpu_findings(dep: Deployment) -> list[Finding]:
    """vLLM refuses to start when free memory < gpu_memory_utilization x total (v1/worker/utils.py); another vLLM
    still starting on the same GPU can make either start fail (TQ426, runtime/startrace.py)."""
    if dep.variant == "cpu":
        return []
    gpus = gpu.gpu_memory()
    if not gpus:
        return []
    util = dep.spec.vllm.gpu_memory_utilization or 0.92  # 0.32's default
    listed = dep.spec.resources.gpus
    wanted = [g["index"] for g in gpus] if isinstance(listed, str) else list(listed)  # a string is "all" (schema)
    out = []
    for g in gpus:
        if g["index"] not in wanted:
            continue
        need = util * g["total_mib"]
        if g["free_mib"] < need:
            holders = [{"pid": p["pid"], "used_mib": p["used_mib"], "name": _name(p["pid"])} for p in g["processes"]]
            out.append(
                _f(
                    "TQ403",
                    Severity.ERROR,
                    f"GPU {g['index']}: {g['free_mib']} MiB free, needs {util} x {g['total_mib']} MiB",
                    {"gpu": g["index"], "free_mib": g["free_mib"], "needed_mib": int(need), "holders": holders},
                    "stop the processes holding it (pids in evidence) or lower vllm.gpu_memory_utilization",
                )
            )
    race = start_race_finding(starting_neighbours(gpus, wanted, set()))
    return out + ([race] if race else [])


def _name(pid: int) -> str | None:

    proc = read_proc(pid)
    return proc.title if proc else None
