"""`tqdeploy doctor`, library side: probe (or load) a host snapshot, run the checks, build one result.

The command module only parses options and calls ``run_doctor``. Checks come from the registry:
the host checks (tqdeploy.hostchecks) always, the model checks (tqdeploy.modelchecks) when that
package exists. A check whose inputs are missing (e.g. model checks without --model) is left out
instead of flooding the output with skips.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdeploy.findings import Finding, exit_code_for, sort_worst_first, summarize

SCHEMA = "tqdeploy.doctor/1"
CHECK_PACKAGES = ("tqdeploy.hostchecks", "tqdeploy.modelchecks")
FAIL_ON = ("error", "warn")


@dataclass
class DoctorResult:
    findings: list[Finding]
    source: str  # "this host" or the snapshot file replayed
    fail_on: str = "error"
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.findings, self.fail_on)

    def to_dict(self) -> dict[str, Any]:
        from tqdeploy import __version__

        return {
            "schema": SCHEMA,
            "tool_version": __version__,
            "source": self.source,
            "options": self.options,
            "findings": [f.to_dict() for f in sort_worst_first(self.findings)],
            "summary": summarize(self.findings) | {"fail_on": self.fail_on, "exit_code": self.exit_code},
        }

    def render(self, console) -> None:
        from tqdeploy.output import render_findings

        render_findings(console, self.findings, title=f"tqdeploy doctor: {self.source}")
        s = summarize(self.findings)
        console.print(
            f"{s['error']} error(s), {s['warn']} warning(s), {s['info']} info, {s['ok']} ok, "
            f"{s['skipped']} skipped; `tqdeploy explain ID` explains a check"
        )


def load_check_packages() -> None:
    for name in CHECK_PACKAGES:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


def select_checks(ctx) -> list[str]:
    """Ids of the checks to run: host checks always, others only when their inputs are given."""
    from tqdeploy.checkbase import REGISTRY

    ids = []
    for cid, chk in sorted(REGISTRY.items()):
        optional = [n for n in chk.needs if n != "host"]
        if all(getattr(ctx, n, None) is not None for n in optional):
            ids.append(cid)
    return ids


def validate_options(vllm_version: str, fail_on: str, image_cuda: str | None = None) -> None:
    from packaging.version import InvalidVersion, Version

    from tqdeploy.errors import TQError

    if fail_on not in FAIL_ON:
        raise TQError(
            f"--fail-on {fail_on!r} is not one of {', '.join(FAIL_ON)}", "use --fail-on error or --fail-on warn"
        )
    try:
        Version(vllm_version)
    except InvalidVersion:
        raise TQError(f"--vllm-version {vllm_version!r} is not a version", "pass a release such as 0.32.0")
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
) -> DoctorResult:
    """serving: what vLLM will be asked for (tensor_parallel_size, max_model_len, kv_cache_dtype, ...);
    command / command_file: the launch command itself, linted (TQ3xx) and read for the same values."""
    from tqdeploy.checkbase import CheckContext, run_checks
    from tqdeploy.snapshot import HostSnapshot

    validate_options(vllm_version, fail_on, image_cuda)
    model_facts = _load_model(model) if model else None
    if snapshot is not None:
        host = HostSnapshot.load(snapshot)
        source = f"snapshot {snapshot}"
    else:
        from tqdeploy.probe import collect

        host = collect(offline=offline, **(probe_kwargs or {}))
        source = "this host"
    if snapshot_out is not None:
        _save(host, snapshot_out)
    options = {"vllm_version": vllm_version, "offline": offline}
    if image_cuda:
        options["image_cuda"] = image_cuda
    flag_findings = []
    if command or command_file is not None:
        from tqdeploy.doctorflags import lint_launch

        launch_options, flag_findings = lint_launch(command, command_file, vllm_version, host)
        options.update(launch_options)
    options.update({k: v for k, v in (serving or {}).items() if v is not None})  # explicit options win
    ctx = CheckContext(host=host, model=model_facts, options=options)
    load_check_packages()
    findings = run_checks(ctx, select_checks(ctx)) + flag_findings
    return DoctorResult(findings=findings, source=source, fail_on=fail_on, options=options)


def _save(host, path: Path) -> None:
    from tqdeploy.errors import TQError

    try:
        host.save(path)
    except OSError as exc:
        raise TQError(
            f"cannot write snapshot to {path} ({exc.strerror or exc})",
            "pass a --snapshot-out path in a writable folder",
        )


def _load_model(source: str):
    from tqdeploy.errors import TQError

    if importlib.util.find_spec("tqdeploy.model") is None:
        raise TQError(
            "--model needs the checkpoint audit (tqdeploy.model), which this install lacks",
            "reinstall tqdeploy, or run doctor without --model",
        )
    from tqdeploy.model import load_model_facts

    return load_model_facts(source)
