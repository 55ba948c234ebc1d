"""`tqdeploy lint`: check a vLLM launch command (or the one in a shell script) against the pinned vLLM."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.bundle.replay import load_host_snapshot
from tqdeploy.commands import options
from tqdeploy.errors import TQError
from tqdeploy.findings import exit_code_for
from tqdeploy.lint import lint_source
from tqdeploy.model import load_model_facts
from tqdeploy.output import emit
from tqdeploy.plan.gpus import gpu_by_name
from tqdeploy.snapshot import GPU, HostSnapshot


def lint(
    ctx: typer.Context,
    command: list[str] | None = typer.Argument(
        None,
        help="The command, after `--`: vllm serve MODEL ..., "
        "python -m vllm.entrypoints.openai.api_server ..., docker run ...",
    ),
    file: Path | None = options.script_file("Lint the vLLM command in a shell script."),
    fix: bool = typer.Option(False, "--fix", help="Print only the corrected command (secrets stay redacted)."),
    as_json: bool = options.as_json("tqdeploy.lint/1"),
    fail_on: str = options.fail_on(),
    vllm_version: str | None = options.vllm_version(default="the image tag's, else tqdeploy's pinned release"),
    model: str | None = options.model("Checkpoint for TP / max-model-len / TurboQuant rules"),
    snapshot: Path | None = options.snapshot("for GPU rules"),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU by name instead of a snapshot, e.g. H200."),
    gpus: int = typer.Option(1, "--gpus", min=1, help="Number of GPUs with --gpu."),
    live: bool | None = typer.Option(
        None,
        "--live/--no-live",
        help="Also parse with vLLM's own parser (default: when the pinned vLLM is importable).",
    ),
) -> int:
    """Find invalid flags, false advice and risky settings; exit 1 when a finding is an error (see --fail-on)."""
    if snapshot is not None and gpu is not None:
        raise TQError("give either --snapshot or --gpu, not both", "--snapshot FILE records the real host")
    host = _host(snapshot, gpu, gpus)
    facts = load_model_facts(model) if model is not None else None
    report = lint_source(command, file, vllm_version=vllm_version, model=facts, host=host, live=live)
    if fix and not as_json:
        typer.echo(report.fixed_command_text)
    else:
        emit(report, as_json)
    return exit_code_for(report.findings, fail_on)


def _host(snapshot: Path | None, gpu: str | None, count: int) -> HostSnapshot | None:
    """The host the GPU rules check against: a recorded snapshot, `count` GPUs of a catalogue name, or none."""
    if snapshot is not None:
        return load_host_snapshot(snapshot)
    if gpu is None:
        return None
    entry = gpu_by_name(gpu)
    return HostSnapshot(
        gpus=[
            GPU(
                index=i,
                name=entry["name"],
                memory_total=entry["memory_bytes"],
                compute_capability=list(entry["compute_capability"]),
            )
            for i in range(count)
        ]
    )


def register(app: typer.Typer) -> None:
    app.command("lint")(lint)
