"""`tqdeploy doctor`, library side: probe (or load) a host snapshot, run the checks, build one result.

The command module only parses options and calls ``run_doctor``. Checks come from the registry
(tqdeploy.doctor.checks: host checks always, model checks with --model). A check whose inputs are
missing (e.g. model checks without --model) is left out instead of flooding the output with skips.
A launch command (`-- vllm serve ...` or --file) is linted (TQ3xx, area "flags") without the model:
the model-aware rules are the checkpoint checks TQ203-TQ206, fed the command's own values, so no
problem is reported twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

import tqdeploy.doctor.checks  # noqa: F401  (registers every check)
from tqdeploy.doctor.checks.host.multinode import node_facts
from tqdeploy.doctor.registry import REGISTRY, CheckContext, check_options, run_checks
from tqdeploy.doctor.report import DoctorResult
from tqdeploy.doctor.variant import split_for_variant, validate_variant
from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.keyfile import inspect_key_file
from tqdeploy.lint import lint_source
from tqdeploy.model import load_model_facts
from tqdeploy.model.facts import ModelFacts
from tqdeploy.probe import collect
from tqdeploy.snapshot import HostSnapshot

FAIL_ON = ("error", "warn")


def select_checks(ctx: CheckContext) -> list[str]:
    """Ids of the checks to run: host checks always (a missing host is their skip to report), the others only
    when their inputs are given (no flood of skips for model checks without --model)."""
    return [cid for cid, chk in sorted(REGISTRY.items()) if set(chk.missing(ctx)) <= {"host"}]


def validate_options(vllm_version: str, fail_on: str, image_cuda: str | None = None) -> None:
    if fail_on not in FAIL_ON:
        raise TQError(
            f"--fail-on {fail_on!r} is not one of {', '.join(FAIL_ON)}", "use --fail-on error or --fail-on warn"
        )
    try:
        Version(vllm_version)
    except InvalidVersion:
        raise TQError(f"--vllm-version {vllm_version!r} is not a version", "pass a release such as 0.32.0") from None
    if image_cuda is not None and not re.fullmatch(r"\d+\.\d+", image_cuda):
        raise TQError(
            f"--cuda {image_cuda!r} is not a CUDA major.minor version", "pass e.g. --cuda 12.9 or --cuda 13.0"
        )


def run_doctor(
    *,
    snapshot: Path | None = None,
    snapshot_out: Path | None = None,
    vllm_version: str,
    offline: bool = False,
    model: str | None = None,
    fail_on: str = "error",
    image_cuda: str | None = None,
    probe_kwargs: dict[str, Any] | None = None,
    serving: dict[str, Any] | None = None,
    command: list[str] | None = None,
    command_file: Path | None = None,
    force: bool = False,
    api_key_file: Path | None = None,
    read_snapshot: Callable[[Path], HostSnapshot] | None = None,
    multinode: Path | None = None,
    python: str | None = None,
    variant: str = "gpu",
) -> DoctorResult:
    """serving: what vLLM will be asked for (tensor_parallel_size, max_model_len, kv_cache_dtype, ...);
    command / command_file: the launch command itself, linted (TQ3xx) and read for the same values;
    read_snapshot: how --snapshot FILE is read (the command passes bundle.replay.load_host_snapshot, which also
    replays a bundle); HostSnapshot.load (JSON only) by default."""
    validate_options(vllm_version, fail_on, image_cuda)
    validate_variant(variant)
    if snapshot_out is not None:
        check_snapshot_out(snapshot_out, force)
    model_facts, model_error = _load_model(model) if model else (None, None)
    if snapshot is not None:
        host = (read_snapshot or HostSnapshot.load)(snapshot)
        source = f"snapshot {snapshot}"
    else:
        host = collect(offline=offline, **(probe_kwargs or {}))
        source = "this host"
    if snapshot_out is not None:
        _save(host, snapshot_out)
    options: dict[str, Any] = {"vllm_version": vllm_version, "offline": offline, "variant": variant}
    if image_cuda:
        options["image_cuda"] = image_cuda
    flag_findings: list[Finding] = []
    if command or command_file is not None:
        launch_options, flag_findings = lint_launch(command, command_file, vllm_version, host)
        options.update(launch_options)
    options.update({k: v for k, v in (serving or {}).items() if v is not None})  # explicit options win
    options.update(_local_files(api_key_file, multinode, python))
    ctx = CheckContext(host=host, model=model_facts, options=check_options(options))
    ids, moot = split_for_variant(select_checks(ctx), variant)
    findings = run_checks(ctx, ids) + moot + flag_findings + ([model_error] if model_error else [])
    return DoctorResult(findings=findings, source=source, fail_on=fail_on, options=options, host=host)


def _local_files(api_key_file: Path | None, multinode: Path | None, python: str | None) -> dict[str, Any]:
    """What the checks of this machine's own files read (TQ126, TQ127-TQ130): looked at here, also when
    replaying a snapshot, so an API key never travels in one."""
    out: dict[str, Any] = {}
    if api_key_file is not None:
        out["api_key_file"] = inspect_key_file(api_key_file).to_dict()
    if multinode is not None:  # this host's facts for a node of that build (doctor/checks/host/multinode.py)
        out["multinode"] = node_facts(Path(multinode), python)
    return out


def check_snapshot_out(path: Path, force: bool) -> None:
    """Before any probing: an existing file is replaced only with --force (and then atomically), a
    folder or special file never; a recorded snapshot is evidence someone may still need."""
    if path.is_symlink() or path.exists():
        if not path.is_file() or path.is_symlink():
            raise TQError(
                f"--snapshot-out {path} exists and is not a regular file", "pass a new file name for the snapshot"
            )
        if not force:
            raise TQError(f"--snapshot-out {path} already exists", "pass another file name, or --force to replace it")


def _save(host: HostSnapshot, path: Path) -> None:
    try:
        host.save(path)
    except OSError as exc:
        raise TQError(
            f"cannot write snapshot to {path} ({exc.strerror or exc})",
            "pass a --snapshot-out path in a writable folder",
        ) from exc


def _load_model(source: str) -> tuple[ModelFacts | None, Finding | None]:
    """(facts, None), or (None, a TQ201 error) for a checkpoint folder that is there but cannot be sized
    (a text-only or encoder config, a corrupt header): the host checks still run and say their part.
    A folder or repo that cannot be found stays a usage error (exit 2): nothing was audited."""
    try:
        return load_model_facts(source), None
    except TQError as exc:
        if not Path(source).is_dir():
            raise
        title = f"checkpoint {source} cannot be audited: {exc.message}"
        return None, Finding("TQ201", Severity.ERROR, title, {"model": source}, exc.remediation, area="model")


def lint_launch(
    command: list[str] | None, command_file: Path | None, vllm_version: str, host: HostSnapshot
) -> tuple[dict[str, Any], list[Finding]]:
    """The launch command's lint findings (area "flags", secrets redacted) and the serving values it sets."""
    report = lint_source(command, command_file, vllm_version=vllm_version, host=host, live=False)
    evidence: dict[str, Any] = {"command": report.command_text}
    if report.changed:
        evidence["corrected_command"] = report.fixed_command_text
    findings = [replace(f, area="flags", evidence={"flag": f.location, **evidence}) for f in report.redacted_findings()]
    if not findings:
        title = f"launch command valid for vLLM {report.vllm_version}"
        findings.append(Finding("TQ300", Severity.OK, title, {"command": report.command_text}, area="flags"))
    return report.serving_values(), findings
