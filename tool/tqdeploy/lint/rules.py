"""Semantic rules that need no model: TurboQuant combinations, exposure, secrets, docker options.

Facts behind each rule (../shared/FACTS.md and vLLM 0.32.0 source):
- TQ320: a turboquant_* KV dtype with --attention-backend TRITON_ATTN/FLASHINFER fails
  ("kv_cache_dtype not supported"); left alone, vLLM's backend priority list ends in TURBOQUANT
  (vllm/platforms/cuda.py), which is picked for these dtypes.
- TQ321: TurboQuant + speculative decoding under CUDA graphs produced garbage (vLLM issue #40831);
  --enforce-eager fixed it.
- TQ322/TQ332: without --host vLLM binds all interfaces ("Starting vLLM server on http://0.0.0.0:…"
  in the CPU build's log); --api-key or VLLM_API_KEY guards the /v1 routes
  (vllm/entrypoints/serve/middleware/register.py: args.api_key or envs.VLLM_API_KEY).
- TQ323/TQ333: a secret on argv is visible in `ps` / `docker inspect`, and vLLM printed API keys in its
  "non-default args" log before PR #52523.
- TQ330/TQ331: `--gpus device=0,1` needs inner quotes; Docker's default /dev/shm is 64 MiB.
- TQ334: a published port (-p) forwards to the container's network interface, not to its loopback
  (Docker's bridge network); only --network host shares the host's loopback.
"""

from __future__ import annotations

import re

from tqdeploy.findings import Severity
from tqdeploy.lint.command import Invocation
from tqdeploy.lint.report import Edit, LintFinding
from tqdeploy.lint.validate import ParsedArgs

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
INCOMPATIBLE_TQ_BACKENDS = {"TRITON_ATTN", "FLASHINFER"}
_SECRET_NAME = re.compile(r"(TOKEN|API_KEY|SECRET|PASSWORD|ACCESS_KEY)", re.I)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def is_literal(value: str) -> bool:
    """A value written out, not a reference to the caller's environment ($VAR, ${VAR}, $(cmd))."""
    return bool(value) and not value.startswith("$")


SECRET_OPTIONS = ("api_key", "hf_token")  # vLLM options whose value is a credential
_SECRET_OPTION_NAME = re.compile(r"^--[\w-]*(token|api[-_]?key|secret|password)$", re.I)


def secret_values(inv: Invocation, parsed: ParsedArgs | None) -> set[str]:
    """Every credential written out in the command: redacted from all output."""
    found = {v for k, v in inv.env.items() if is_secret_name(k) and is_literal(v)}
    if parsed is not None:
        for occ in parsed.occurrences:
            if occ.option.dest in SECRET_OPTIONS:
                found.update(v for v in occ.values if is_literal(v))
    argv = inv.argv
    for i in range(inv.vllm_start, inv.vllm_end):  # options vLLM does not know, e.g. --hf_api_token X
        name, has_eq, inline = argv[i].partition("=")
        if _SECRET_OPTION_NAME.match(name):
            value = inline if has_eq else (argv[i + 1] if i + 1 < inv.vllm_end else "")
            if is_literal(value) and not value.startswith("-"):
                found.add(value)
    return found


def turboquant_rules(inv: Invocation, parsed: ParsedArgs) -> list[LintFinding]:
    out: list[LintFinding] = []
    dtype = parsed.value("kv_cache_dtype") or ""
    if not dtype.startswith("turboquant_"):
        return out
    backend = parsed.last("attention_backend")
    if backend is not None and (backend.value or "").upper() in INCOMPATIBLE_TQ_BACKENDS:
        out.append(
            LintFinding(
                "TQ320",
                Severity.ERROR,
                backend.name,
                f"--kv-cache-dtype {dtype} cannot run on --attention-backend {backend.value}: that backend does "
                "not support TurboQuant KV dtypes (vLLM fails with 'kv_cache_dtype not supported')",
                "drop --attention-backend (vLLM then selects TURBOQUANT) or set --attention-backend TURBOQUANT",
                Edit(backend.start, backend.end, ()),
                backend.start,
            )
        )
    spec = parsed.last("speculative_config")
    if spec is not None and not parsed.flag_on("enforce_eager"):
        out.append(
            LintFinding(
                "TQ321",
                Severity.WARN,
                spec.name,
                f"TurboQuant ({dtype}) with speculative decoding under CUDA graphs produced garbage output "
                "(vLLM issue #40831)",
                "add --enforce-eager (it fixed #40831), and compare outputs against a run without TurboQuant",
                Edit(inv.vllm_end, inv.vllm_end, ("--enforce-eager",)),
                spec.start,
            )
        )
    return out


def exposure_rules(inv: Invocation, parsed: ParsedArgs) -> list[LintFinding]:
    out: list[LintFinding] = []
    has_key_flag = parsed.last("api_key") is not None
    has_key = has_key_flag or bool(inv.env.get("VLLM_API_KEY")) or "VLLM_API_KEY" in inv.env
    host_occ = parsed.last("host")
    host = host_occ.value if host_occ else None
    if not inv.kind.startswith("docker") and (host is None or host not in LOOPBACK) and not has_key:
        where = f"--host {host}" if host else "no --host (vLLM binds all interfaces)"
        edit = (
            Edit(host_occ.start, host_occ.end, ("--host", "127.0.0.1"))
            if host_occ
            else Edit(inv.vllm_end, inv.vllm_end, ("--host", "127.0.0.1"))
        )
        out.append(
            LintFinding(
                "TQ322",
                Severity.WARN,
                "--host",
                f"{where} and no API key: anyone who can reach the port can use the model",
                "bind --host 127.0.0.1 (put a proxy in front), or set VLLM_API_KEY from a secret file",
                edit,
                host_occ.start if host_occ else -1,
            )
        )
    if has_key_flag:
        occ = parsed.last("api_key")
        out.append(
            LintFinding(
                "TQ323",
                Severity.WARN,
                "--api-key",
                "an API key is on the command line (value present, not shown): it is visible in `ps`, shell "
                "history and, before vLLM PR #52523, in vLLM's 'non-default args' log line",
                'remove --api-key and export VLLM_API_KEY="$(cat /path/to/secret)" before starting vLLM',
                None,
                occ.start,
            )
        )
    token = parsed.last("hf_token")
    if token is not None and token.values and is_literal(token.value or ""):
        out.append(
            LintFinding(
                "TQ323",
                Severity.WARN,
                "--hf-token",
                "a Hugging Face token is on the command line (value present, not shown): it is visible in `ps` "
                "and shell history",
                "drop the value: a bare --hf-token uses the token from `hf auth login`; or export HF_TOKEN from a file",
                Edit(token.start, token.end, ("--hf-token",)),
                token.start,
            )
        )
    return out


def docker_rules(inv: Invocation, parsed: ParsedArgs | None) -> list[LintFinding]:
    if not inv.kind.startswith("docker"):
        return []
    out: list[LintFinding] = []
    args = inv.argv
    i = inv.docker_start
    has_ipc = has_shm = host_network = False
    has_key = "VLLM_API_KEY" in inv.env or (parsed is not None and parsed.last("api_key") is not None)
    while i < inv.image_index:
        tok = args[i]
        name, has_eq, inline = tok.partition("=")
        value = inline if has_eq else (args[i + 1] if i + 1 < inv.image_index else "")
        vidx = i if has_eq else i + 1
        if name == "--gpus" and value.startswith("device=") and "," in value:
            quoted = f'"{value}"'
            out.append(
                LintFinding(
                    "TQ330",
                    Severity.ERROR,
                    "--gpus",
                    f"--gpus {value} without inner quotes: docker splits the list at the comma and rejects it",
                    f"write --gpus '{quoted}'",
                    Edit(vidx, vidx + 1, (f"--gpus={quoted}",) if has_eq else (quoted,)),
                    i,
                )
            )
        if name == "--ipc" and value == "host":
            has_ipc = True
        if name in ("--network", "--net") and value == "host":
            host_network = True
        if name == "--shm-size":
            has_shm = True
        if name in ("-p", "--publish") and value:
            parts = value.split(":")
            bound_all = len(parts) <= 2 or parts[0] in ("0.0.0.0", "", "[::]", "::")
            if bound_all and not has_key:
                fixed = "127.0.0.1:" + ":".join(parts[-2:]) if len(parts) >= 2 else f"127.0.0.1:{value}:{value}"
                out.append(
                    LintFinding(
                        "TQ332",
                        Severity.WARN,
                        name,
                        f"port {value} is published on all interfaces and vLLM has no API key",
                        f"publish on loopback ({name} {fixed}) or set VLLM_API_KEY via --env-file",
                        Edit(vidx, vidx + 1, (f"{name}={fixed}",) if has_eq else (fixed,)),
                        i,
                    )
                )
        if name in ("-e", "--env") and "=" in value:
            var, val = value.split("=", 1)
            if is_secret_name(var) and is_literal(val):
                out.append(
                    LintFinding(
                        "TQ333",
                        Severity.WARN,
                        name,
                        f"{var} is set to a literal value on the command line (value present, not shown): "
                        "visible in `ps` and `docker inspect`",
                        f"pass it through from the environment (-e {var}) or use --env-file with a 0600 file",
                        Edit(i, vidx + 1, ("-e", var)),
                        i,
                    )
                )
        i += 1
    host_occ = parsed.last("host") if parsed is not None else None
    if host_occ is not None and host_occ.value in LOOPBACK and not host_network:
        out.append(
            LintFinding(
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
        )
    if not (has_ipc or has_shm):
        out.append(
            LintFinding(
                "TQ331",
                Severity.WARN,
                "--ipc",
                "neither --ipc=host nor --shm-size: Docker's default /dev/shm is 64 MiB, too small for "
                "PyTorch/NCCL shared memory (tensor parallel workers fail or hang)",
                "add --ipc=host (or --shm-size 16g)",
                Edit(inv.docker_start, inv.docker_start, ("--ipc=host",)),
                inv.docker_start,
            )
        )
    return out


def config_file_rule(parsed: ParsedArgs) -> list[LintFinding]:
    """--config FILE: vLLM reads more options from a YAML file that this lint does not see."""
    occ = parsed.last("config")
    if occ is None or not occ.value:
        return []
    return [
        LintFinding(
            "TQ314",
            Severity.INFO,
            "--config",
            f"options inside {occ.value} are not checked (vLLM merges them into the command line)",
            "lint them as flags: tqdeploy lint -- vllm serve MODEL --flag ... (same keys, `--` prefixed)",
            None,
            occ.start,
        )
    ]
