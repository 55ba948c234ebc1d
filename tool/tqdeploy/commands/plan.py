"""`tqdeploy plan`: KV bytes per token, KV tokens and concurrency per KV-cache dtype, and a recommendation."""

from __future__ import annotations

from pathlib import Path

import typer

from tqdeploy.commands import options

ORDER = 30


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
    from tqdeploy.errors import TQError
    from tqdeploy.model import load_model_facts
    from tqdeploy.output import emit
    from tqdeploy.plan import make_plan
    from tqdeploy.plan.host import resolve_host
    from tqdeploy.plan.planner import check_plan_numbers
    from tqdeploy.units import GiB

    skips: tuple[int, ...] = ()
    if skip_layers:
        try:
            skips = tuple(int(x) for x in skip_layers.replace(" ", "").split(",") if x)
        except ValueError:
            raise TQError(
                f"--skip-layers {skip_layers!r} is not a comma-separated list of layer indices",
                "e.g. --skip-layers 0,1,62,63",
            ) from None
    check_plan_numbers(
        {"--gpus": gpus, "--tp": tp, "--max-model-len": max_model_len},
        {
            "--kv-cache-memory-gib": kv_cache_memory_gib,
            "--reserve-gib": reserve_gib,
            "--min-concurrency": min_concurrency,
        },
    )
    from tqdeploy.bundle.replay import load_host_snapshot

    host = resolve_host(snapshot=snapshot, gpu=gpu, gpus=gpus, read_snapshot=load_host_snapshot)
    facts = load_model_facts(model)
    if max_model_len is None:
        from tqdeploy.model.compat import config_max_model_len

        max_model_len = config_max_model_len(facts)
        if max_model_len is None:
            raise TQError("config.json names no context length", "pass --max-model-len")
    result = make_plan(
        facts,
        gpu_memory_bytes=host.memory_bytes,
        num_gpus=host.count,
        tp=tp,
        max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization,
        kv_cache_dtypes=kv_cache_dtype or None,
        skip_layers=skips,
        vllm_version=vllm_version,
        compute_capability=host.compute_capability,
        gpu_name=host.name,
        kv_cache_memory_bytes=int(kv_cache_memory_gib * GiB) if kv_cache_memory_gib is not None else None,
        reserve_bytes=int(reserve_gib * GiB) if reserve_gib is not None else None,
        enforce_eager=enforce_eager,
        min_concurrency=min_concurrency,
    )
    result.host["source"] = host.source
    from tqdeploy.pins import DEFAULT_GPU_MEMORY_UTILIZATION
    from tqdeploy.plan.host import held_memory_problem

    util = gpu_memory_utilization if gpu_memory_utilization is not None else DEFAULT_GPU_MEMORY_UTILIZATION
    held = held_memory_problem(host, util) if kv_cache_memory_gib is None else None
    if held is not None:
        result.problems.append(held)
    emit(result, as_json)
    failed = result.recommended is None or any(p.severity.value == "error" for p in result.problems)
    return 1 if failed else 0


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
