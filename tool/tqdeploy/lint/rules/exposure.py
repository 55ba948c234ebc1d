"""Who can reach the server, and credentials on the command line (TQ322, TQ323).

- TQ322: without --host vLLM binds all interfaces ("Starting vLLM server on http://0.0.0.0:..."
  in the CPU build's log); --api-key or VLLM_API_KEY guards the /v1 routes
  (vllm/entrypoints/serve/middleware/register.py: args.api_key or envs.VLLM_API_KEY).
- TQ323: a secret on argv is visible in `ps` / `docker inspect`, and vLLM printed API keys in its
  "non-default args" log before PR #52523.
"""

from __future__ import annotations

from tqdeploy.findings import Edit, Finding, Severity
from tqdeploy.lint.registry import LintContext, rule
from tqdeploy.lint.report import lint_finding
from tqdeploy.lint.rules.cachekey import api_key_in_compile_key
from tqdeploy.lint.secrets import is_literal

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


@rule("TQ322", "exposure", "reachable from the network without an API key")
def open_without_key(ctx: LintContext) -> list[Finding]:
    inv, parsed = ctx.inv, ctx.parsed
    has_key = (
        parsed.last("api_key") is not None
        or "VLLM_API_KEY" in inv.env
        or inv.keyed_launcher  # launch_vllm.py refuses to start without its key file
    )
    host_occ = parsed.last("host")
    host = host_occ.value if host_occ else None
    if inv.kind.startswith("docker") or (host is not None and host in LOOPBACK) or has_key:
        return []
    where = f"--host {host}" if host else "no --host (vLLM binds all interfaces)"
    edit = (
        Edit(host_occ.start, host_occ.end, ("--host", "127.0.0.1"))
        if host_occ
        else Edit(inv.vllm_end, inv.vllm_end, ("--host", "127.0.0.1"))
    )
    return [
        lint_finding(
            "TQ322",
            Severity.WARN,
            "--host",
            f"{where} and no API key: anyone who can reach the port can use the model",
            "bind --host 127.0.0.1 (put a proxy in front), or set VLLM_API_KEY from a secret file",
            edit,
            host_occ.start if host_occ else -1,
        )
    ]


def _key_fix(version: str) -> str:
    if api_key_in_compile_key(version):  # TQ344: that release hashes VLLM_API_KEY into its compile cache
        return (
            f"remove --api-key; on vLLM {version} do not export VLLM_API_KEY either (TQ344): start vLLM through the "
            "launch_vllm.py `tqdeploy build` renders, which reads the key file into the server's arguments"
        )
    return 'remove --api-key and export VLLM_API_KEY="$(cat /path/to/secret)" before starting vLLM'


@rule("TQ323", "exposure", "credential on the command line")
def secret_on_argv(ctx: LintContext) -> list[Finding]:
    out: list[Finding] = []
    key = ctx.parsed.last("api_key")
    if key is not None:
        out.append(
            lint_finding(
                "TQ323",
                Severity.WARN,
                "--api-key",
                "an API key is on the command line (value present, not shown): it is visible in `ps`, shell "
                "history and, before vLLM PR #52523, in vLLM's 'non-default args' log line",
                _key_fix(ctx.schema.version),
                None,
                key.start,
            )
        )
    token = ctx.parsed.last("hf_token")
    if token is not None and token.values and is_literal(token.value or ""):
        out.append(
            lint_finding(
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
