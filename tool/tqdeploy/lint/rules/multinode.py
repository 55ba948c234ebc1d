"""What a node of a multi-node start needs (TQ345-TQ347): vLLM 0.32.0's own multi-node mode, `--nnodes N
--node-rank R --master-addr A --master-port P [--headless]` (vllm/engine/arg_utils.py, vllm/config/parallel.py),
which a multi-node build's multinode.sh adds to serve.sh's command. Each rule applies only to a command with
--nnodes > 1."""

from __future__ import annotations

from tqdeploy.findings import Finding, Severity
from tqdeploy.lint.registry import LintContext, rule
from tqdeploy.lint.report import lint_finding

DEFAULT_MASTER_PORT = 29501  # vllm/config/parallel.py ParallelConfig.master_port
DEFAULT_API_PORT = 8000  # vllm/entrypoints/openai/cli_args.py FrontendArgs.port
IFNAME_VARS = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")


def _int(ctx: LintContext, dest: str, default: int) -> int | None:
    value = ctx.parsed.value(dest)
    try:
        return int(value) if value is not None else default
    except ValueError:
        return None  # TQ30x reports a value vLLM's parser refuses


def _nodes(ctx: LintContext) -> int:
    return _int(ctx, "nnodes", 1) or 1


def _token(ctx: LintContext, dest: str) -> int:
    occ = ctx.parsed.last(dest)
    return occ.start if occ else -1


@rule("TQ345", "multinode", "multi-node ports in range and distinct")
def node_ports(ctx: LintContext) -> list[Finding]:
    if _nodes(ctx) < 2:
        return []
    master, api = _int(ctx, "master_port", DEFAULT_MASTER_PORT), _int(ctx, "port", DEFAULT_API_PORT)
    out = []
    if master is not None and not 1024 <= master <= 65535:
        out.append((f"--master-port {master} is outside 1024-65535", "pick a free port 1024-65535 on the leader"))
    if master is not None and master == api:
        out.append((f"--master-port {master} is the API port too: the leader cannot bind both", "use two ports"))
    return [
        lint_finding("TQ345", Severity.ERROR, "--master-port", title, fix, None, _token(ctx, "master_port"))
        for title, fix in out
    ]


@rule("TQ346", "multinode", "the interface between nodes is named")
def node_interface(ctx: LintContext) -> list[Finding]:
    if _nodes(ctx) < 2 or any(v in ctx.inv.env or v in ctx.variables for v in IFNAME_VARS):
        return []
    return [
        lint_finding(
            "TQ346",
            Severity.WARN,
            "--nnodes",
            "neither GLOO_SOCKET_IFNAME nor NCCL_SOCKET_IFNAME is set for a multi-node start: torch.distributed "
            "picks an interface itself, which on a host with several networks may be one the nodes cannot share",
            "set both to the interface of the network between the nodes (a pod's: eth0), as multinode.sh does",
            None,
            _token(ctx, "nnodes"),
        )
    ]


@rule("TQ347", "multinode", "tensor x pipeline parallel fits GPUs per node x nodes")
def node_layout(ctx: LintContext) -> list[Finding]:
    nodes = _nodes(ctx)
    tp, pp = _int(ctx, "tensor_parallel_size", 1), _int(ctx, "pipeline_parallel_size", 1)
    if nodes < 2 or tp is None or pp is None:
        return []
    world = tp * pp
    if world % nodes:  # vllm/engine/arg_utils.py: "`--nnodes` must evenly divide the total world size"
        title = f"--nnodes {nodes} does not divide tensor x pipeline parallel = {tp} x {pp} = {world}"
        fix = "vLLM refuses it at start: make tp x pp a multiple of the nodes (one pipeline stage per node)"
        return [lint_finding("TQ347", Severity.ERROR, "--nnodes", title, fix, None, _token(ctx, "nnodes"))]
    gpus = len(ctx.host.gpus) if ctx.host is not None else None
    if gpus and world // nodes > gpus:
        title = f"{world // nodes} ranks per node (tp {tp} x pp {pp} / {nodes} nodes) but a node has {gpus} GPU(s)"
        fix = "lower --tensor-parallel-size, or add nodes (raise --nnodes and --pipeline-parallel-size)"
        return [lint_finding("TQ347", Severity.ERROR, "--nnodes", title, fix, None, _token(ctx, "nnodes"))]
    return []
