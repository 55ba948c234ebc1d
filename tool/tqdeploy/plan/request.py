"""What `tqdeploy plan` is asked, as one value, and the plan it gets: the command parses options, this runs them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tqdeploy.errors import TQError
from tqdeploy.findings import Severity
from tqdeploy.model import load_model_facts
from tqdeploy.model.compat import config_max_model_len
from tqdeploy.pins import DEFAULT_GPU_MEMORY_UTILIZATION
from tqdeploy.plan.host import held_memory_problem, resolve_host
from tqdeploy.plan.planner import check_plan_numbers, make_plan
from tqdeploy.plan.result import Plan
from tqdeploy.snapshot import HostSnapshot
from tqdeploy.units import GiB


@dataclass(frozen=True)
class PlanRequest:
    model: str
    snapshot: Path | None = None
    gpu: str | None = None
    gpus: int | None = None
    tp: int | None = None
    max_model_len: int | None = None  # None: the config's context length
    gpu_memory_utilization: float | None = None
    kv_cache_dtypes: tuple[str, ...] = ()  # () = every dtype
    skip_layers: str | None = None  # as typed: "0,1,62"
    vllm_version: str | None = None
    kv_cache_memory_gib: float | None = None
    reserve_gib: float | None = None
    enforce_eager: bool = False
    min_concurrency: float = 1.0


def parse_skip_layers(text: str | None) -> tuple[int, ...]:
    """--skip-layers 0,1,62 as layer indices; a TQError naming the option for anything else."""
    if not text:
        return ()
    try:
        return tuple(int(x) for x in text.replace(" ", "").split(",") if x)
    except ValueError:
        raise TQError(
            f"--skip-layers {text!r} is not a comma-separated list of layer indices", "e.g. --skip-layers 0,1,62,63"
        ) from None


def _gib_bytes(gib: float | None) -> int | None:
    return int(gib * GiB) if gib is not None else None


def run_plan(req: PlanRequest, read_snapshot: Callable[[Path], HostSnapshot]) -> Plan:
    """The plan for this request on the host it names (a snapshot read with read_snapshot, a GPU by name, or
    this host), with an error where other processes already hold more GPU memory than vLLM would leave free."""
    skips = parse_skip_layers(req.skip_layers)
    check_plan_numbers(
        {"--gpus": req.gpus, "--tp": req.tp, "--max-model-len": req.max_model_len},
        {
            "--kv-cache-memory-gib": req.kv_cache_memory_gib,
            "--reserve-gib": req.reserve_gib,
            "--min-concurrency": req.min_concurrency,
        },
    )
    host = resolve_host(snapshot=req.snapshot, gpu=req.gpu, gpus=req.gpus, read_snapshot=read_snapshot)
    facts = load_model_facts(req.model)
    max_model_len = req.max_model_len if req.max_model_len is not None else config_max_model_len(facts)
    if max_model_len is None:
        raise TQError("config.json names no context length", "pass --max-model-len")
    result = make_plan(
        facts,
        gpu_memory_bytes=host.memory_bytes,
        num_gpus=host.count,
        tp=req.tp,
        max_model_len=max_model_len,
        gpu_memory_utilization=req.gpu_memory_utilization,
        kv_cache_dtypes=req.kv_cache_dtypes or None,
        skip_layers=skips,
        vllm_version=req.vllm_version,
        compute_capability=host.compute_capability,
        gpu_name=host.name,
        kv_cache_memory_bytes=_gib_bytes(req.kv_cache_memory_gib),
        reserve_bytes=_gib_bytes(req.reserve_gib),
        enforce_eager=req.enforce_eager,
        min_concurrency=req.min_concurrency,
    )
    result.host["source"] = host.source
    util = DEFAULT_GPU_MEMORY_UTILIZATION if req.gpu_memory_utilization is None else req.gpu_memory_utilization
    held = held_memory_problem(host, util) if req.kv_cache_memory_gib is None else None
    if held is not None:
        result.problems.append(held)
    return result


def plan_failed(result: Plan) -> bool:
    """No recommendation, or an error among the problems: `plan` exits 1."""
    return result.recommended is None or any(p.severity == Severity.ERROR for p in result.problems)
