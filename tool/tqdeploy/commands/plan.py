"""`tqdeploy plan`: KV bytes per token, KV tokens and concurrency per KV-cache dtype, and a recommendation."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.bundle.replay import load_host_snapshot
from tqdeploy.commands import options
from tqdeploy.output import emit
from tqdeploy.plan.request import PlanRequest, plan_failed, run_plan


def plan(
    model: str = options.model(required=True),
    snapshot: Path | None = options.snapshot(),
    gpu: str | None = typer.Option(None, "--gpu", help="Plan for a GPU by name (e.g. H200) instead of a host."),
    gpus: int | None = typer.Option(
        None, "--gpus", help="Number of GPUs (default: all in the snapshot, 1 with --gpu)."
    ),
    # no minimum here: plan says what is wrong with 0 itself (one TQError line, tested)
    tp: int | None = options.tensor_parallel_size("Tensor parallel size (default: --gpus).", minimum=None),
    max_model_len: int | None = options.max_model_len("Default: the config's context length.", minimum=None),
    gpu_memory_utilization: float | None = typer.Option(
        None, "--gpu-memory-utilization", help="Default: vLLM's own default (0.92 in 0.32)."
    ),
    kv_cache_dtype: list[str] | None = typer.Option(None, "--kv-cache-dtype", help="Only these dtypes (repeatable)."),
    skip_layers: str | None = typer.Option(
        None, "--skip-layers", help="Extra layers kept at model dtype, e.g. 0,1,62."
    ),
    vllm_version: str | None = options.vllm_version("vLLM release to plan for"),
    kv_cache_memory_gib: float | None = typer.Option(
        None, "--kv-cache-memory-gib", help="Plan for this KV memory per GPU (vLLM --kv-cache-memory-bytes)."
    ),
    reserve_gib: float | None = typer.Option(
        None, "--reserve-gib", help="Non-KV, non-weight memory per GPU (replaces tqdeploy's estimate)."
    ),
    enforce_eager: bool = typer.Option(False, "--enforce-eager", help="No CUDA graphs (no graph reserve)."),
    min_concurrency: float = typer.Option(
        1.0, "--min-concurrency", help="Sequences of max-model-len the recommendation must hold."
    ),
    as_json: bool = options.as_json("tqdeploy.plan/1", what="the plan"),
) -> int:
    """Plan KV-cache memory per dtype (vLLM's exact formulas) and recommend a --kv-cache-dtype."""
    request = PlanRequest(
        model=model,
        snapshot=snapshot,
        gpu=gpu,
        gpus=gpus,
        tp=tp,
        max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization,
        kv_cache_dtypes=tuple(kv_cache_dtype or ()),
        skip_layers=skip_layers,
        vllm_version=vllm_version,
        kv_cache_memory_gib=kv_cache_memory_gib,
        reserve_gib=reserve_gib,
        enforce_eager=enforce_eager,
        min_concurrency=min_concurrency,
    )
    result = run_plan(request, read_snapshot=load_host_snapshot)
    emit(result, as_json)
    return 1 if plan_failed(result) else 0


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
