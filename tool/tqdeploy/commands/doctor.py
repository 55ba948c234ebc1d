"""`tqdeploy doctor`: audit this host (or a recorded snapshot) for serving vLLM with TurboQuant."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.bundle.replay import load_host_snapshot
from tqdeploy.commands import options
from tqdeploy.doctor.run import run_doctor
from tqdeploy.output import emit
from tqdeploy.pins import DEFAULT_VLLM_VERSION


def doctor(
    as_json: bool = options.as_json("tqdeploy.doctor/1"),
    snapshot: Path | None = options.snapshot("to replay the checks on; no access to this machine"),
    snapshot_out: Path | None = typer.Option(
        None, "--snapshot-out", help="Write the raw host snapshot (JSON) to a new file (see --force)."
    ),
    force: bool = typer.Option(False, "--force", help="Let --snapshot-out replace an existing file (atomically)."),
    fail_on: str = options.fail_on(),
    vllm_version: str | None = options.vllm_version(),
    offline: bool = typer.Option(False, "--offline", help="Skip the mirror (HF_ENDPOINT) reachability test."),
    variant: str = typer.Option(
        "gpu",
        "--variant",
        help="The build that will run here, as a spec's variant: gpu, or cpu (the CPU build: GPU checks skipped).",
    ),
    model: str | None = options.model("Also audit a checkpoint"),
    cuda: str | None = typer.Option(
        None,
        "--cuda",
        help="CUDA of the vLLM build you will run, e.g. 12.9 for a "
        "-cu129 image (default: looked up for --vllm-version).",
    ),
    tp: int | None = options.tensor_parallel_size("Tensor parallel size the model will run with (checkpoint checks)."),
    max_model_len: int | None = options.max_model_len("Context length the model will serve (checkpoint checks)."),
    kv_cache_dtype: str | None = typer.Option(
        None, "--kv-cache-dtype", help="KV-cache dtype to check, e.g. turboquant_4bit_nc."
    ),
    file: Path | None = options.script_file(
        "Also lint the vLLM command in this launch script and check the model against its flags."
    ),
    api_key_file: Path | None = typer.Option(
        None, "--api-key-file", help="Also check the server's API key file: a usable key, mode 0600 (TQ126)."
    ),
    multinode: Path | None = typer.Option(
        None, "--multinode", help="Also check what a node of this multi-node build needs here (TQ127-TQ130)."
    ),
    python: str | None = typer.Option(None, "--python", help="With --multinode: the interpreter the node runs."),
    command: list[str] | None = typer.Argument(None, help="Or the launch command after `--`: vllm serve MODEL ..."),
) -> int:
    """Check the driver, GPUs, PCIe, topology, shared memory, Docker, CUDA libraries and model cache."""
    result = run_doctor(
        snapshot=snapshot,
        snapshot_out=snapshot_out,
        vllm_version=vllm_version or DEFAULT_VLLM_VERSION,
        offline=offline,
        model=model,
        fail_on=fail_on,
        image_cuda=cuda,
        serving={"tensor_parallel_size": tp, "max_model_len": max_model_len, "kv_cache_dtype": kv_cache_dtype},
        command=command,
        command_file=file,
        force=force,
        api_key_file=api_key_file,
        read_snapshot=load_host_snapshot,
        multinode=multinode,
        python=python,
        variant=variant,
    )
    emit(result, as_json)
    return result.exit_code


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
