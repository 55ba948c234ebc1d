"""`tqdeploy lint`: check a vLLM launch command (or the one in a shell script) against the pinned vLLM."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.commands import options

ORDER = 40


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
    from tqdeploy.errors import TQError

    if snapshot is not None and gpu is not None:
        raise TQError("give either --snapshot or --gpu, not both", "--snapshot FILE records the real host")
    host = _host(snapshot, gpu, gpus)
    facts = None
    if model is not None:
        from tqdeploy.model import load_model_facts

        facts = load_model_facts(model)
    from tqdeploy.lint import lint_source

    report = lint_source(command, file, vllm_version=vllm_version, model=facts, host=host, live=live)
    if fix and not as_json:
        typer.echo(report.fixed_command_text)
    else:
        from tqdeploy.output import emit

        emit(report, as_json)
    from tqdeploy.findings import exit_code_for

    return exit_code_for(report.findings, fail_on)


def _host(snapshot: Path | None, gpu: str | None, count: int):
    from tqdeploy.snapshot import GPU, HostSnapshot

    if snapshot is not None:
        from tqdeploy.bundle.replay import load_host_snapshot

        return load_host_snapshot(snapshot)
    if gpu is None:
        return None
    from tqdeploy.plan.gpus import gpu_by_name

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
