"""docker run options around a vLLM image (TQ330-TQ334).

- TQ330/TQ331: `--gpus device=0,1` needs inner quotes; Docker's default /dev/shm is 64 MiB.
- TQ332/TQ333: a port published on all interfaces without an API key; a credential as a literal -e value
  is visible in `ps` and `docker inspect`.
- TQ334: a published port (-p) forwards to the container's network interface, not to its loopback
  (Docker's bridge network); only --network host shares the host's loopback.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from tqdeploy.findings import Edit, Finding, Severity
from tqdeploy.lint.registry import DOCKER_KINDS, LintContext, rule
from tqdeploy.lint.report import lint_finding
from tqdeploy.lint.rules.exposure import LOOPBACK
from tqdeploy.lint.secrets import is_literal, is_secret_name


class DockerOption(NamedTuple):
    at: int  # argv index of the option
    name: str
    value: str  # inline (--x=v) or the next token
    value_index: int
    has_eq: bool

    def replace_value(self, value: str) -> Edit:
        return Edit(self.value_index, self.value_index + 1, (f"{self.name}={value}",) if self.has_eq else (value,))


def docker_options(ctx: LintContext) -> Iterator[DockerOption]:
    """Every token between `docker run` and the image, read as an option with its value."""
    args, inv = ctx.inv.argv, ctx.inv
    for i in range(inv.docker_start, inv.image_index):
        name, has_eq, inline = args[i].partition("=")
        value = inline if has_eq else (args[i + 1] if i + 1 < inv.image_index else "")
        yield DockerOption(i, name, value, i if has_eq else i + 1, bool(has_eq))


def _given(ctx: LintContext, names: tuple[str, ...], value: str | None = None) -> bool:
    return any(o.name in names and (value is None or o.value == value) for o in docker_options(ctx))


@rule("TQ330", "docker", "--gpus device list without inner quotes", kinds=DOCKER_KINDS)
def unquoted_gpu_list(ctx: LintContext) -> list[Finding]:
    out = []
    for o in docker_options(ctx):
        if o.name == "--gpus" and o.value.startswith("device=") and "," in o.value:
            quoted = f'"{o.value}"'
            out.append(
                lint_finding(
                    "TQ330",
                    Severity.ERROR,
                    "--gpus",
                    f"--gpus {o.value} without inner quotes: docker splits the list at the comma and rejects it",
                    f"write --gpus '{quoted}'",
                    o.replace_value(quoted),
                    o.at,
                )
            )
    return out


@rule("TQ331", "docker", "docker without --ipc=host or --shm-size", kinds=DOCKER_KINDS)
def small_shared_memory(ctx: LintContext) -> list[Finding]:
    if _given(ctx, ("--ipc",), "host") or _given(ctx, ("--shm-size",)):
        return []
    start = ctx.inv.docker_start
    return [
        lint_finding(
            "TQ331",
            Severity.WARN,
            "--ipc",
            "neither --ipc=host nor --shm-size: Docker's default /dev/shm is 64 MiB, too small for "
            "PyTorch/NCCL shared memory (tensor parallel workers fail or hang)",
            "add --ipc=host (or --shm-size 16g)",
            Edit(start, start, ("--ipc=host",)),
            start,
        )
    ]


@rule("TQ332", "docker", "port published on all interfaces without an API key", kinds=DOCKER_KINDS)
def published_without_key(ctx: LintContext) -> list[Finding]:
    if "VLLM_API_KEY" in ctx.inv.env or ctx.parsed.last("api_key") is not None:
        return []
    out = []
    for o in docker_options(ctx):
        if o.name not in ("-p", "--publish") or not o.value:
            continue
        parts = o.value.split(":")
        if len(parts) <= 2 or parts[0] in ("0.0.0.0", "", "[::]", "::"):
            fixed = "127.0.0.1:" + ":".join(parts[-2:]) if len(parts) >= 2 else f"127.0.0.1:{o.value}:{o.value}"
            out.append(
                lint_finding(
                    "TQ332",
                    Severity.WARN,
                    o.name,
                    f"port {o.value} is published on all interfaces and vLLM has no API key",
                    f"publish on loopback ({o.name} {fixed}) or set VLLM_API_KEY via --env-file",
                    o.replace_value(fixed),
                    o.at,
                )
            )
    return out


@rule("TQ333", "docker", "credential as a literal -e value", kinds=DOCKER_KINDS)
def literal_secret_env(ctx: LintContext) -> list[Finding]:
    out = []
    for o in docker_options(ctx):
        if o.name not in ("-e", "--env") or "=" not in o.value:
            continue
        var, val = o.value.split("=", 1)
        if is_secret_name(var) and is_literal(val):
            out.append(
                lint_finding(
                    "TQ333",
                    Severity.WARN,
                    o.name,
                    f"{var} is set to a literal value on the command line (value present, not shown): "
                    "visible in `ps` and `docker inspect`",
                    f"pass it through from the environment (-e {var}) or use --env-file with a 0600 file",
                    Edit(o.at, o.value_index + 1, ("-e", var)),
                    o.at,
                )
            )
    return out


@rule("TQ334", "docker", "--host loopback inside the container", kinds=DOCKER_KINDS)
def loopback_in_container(ctx: LintContext) -> list[Finding]:
    host_occ = ctx.parsed.last("host")
    if host_occ is None or host_occ.value not in LOOPBACK or _given(ctx, ("--network", "--net"), "host"):
        return []
    return [
        lint_finding(
            "TQ334",
            Severity.WARN,
            "--host",
            f"--host {host_occ.value} inside the container: vLLM listens on the container's own loopback, "
            "which published ports (-p) do not reach, so clients outside the container cannot connect",
            "drop --host inside the container (vLLM then listens on the container's interfaces) and publish on "
            "the host's loopback instead: -p 127.0.0.1:8000:8000",
            Edit(host_occ.start, host_occ.end, ()),
            host_occ.start,
        )
    ]
