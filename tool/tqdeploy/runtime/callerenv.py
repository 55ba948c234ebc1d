"""The caller's environment variables that change what `up` starts, and what tqdeploy does with them.

serve.sh, multinode.sh and launch_vllm.py (templates/) read a few TQ_* variables before the build's own values, so
that compose, Kubernetes and a shell can point a build at another model folder, key file or address. `up` passes
the caller's environment to serve.sh, these included, as a container's would be: the choice is to record and
show them, not to drop or refuse them (a caller may set TQ_MODEL_DIR on purpose, e.g. a model on another disk).
So none of them acts silently: `up` warns (TQ427) and records them in state.json (`env_overrides`), `status` shows
them, and a failed start names them. Their values are paths, addresses and modes, never keys.

Set by `up` itself, so not the caller's to override: TQ_ROLE, TQ_NODE_RANK and TQ_MASTER_ADDR (a multi-node build
on one host, multinode node_env); the process runtime sets TQ_MODEL_DIR and TQ_API_KEY_FILE only when
the caller has not (process launch.serve_env).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from tqdeploy.findings import Finding, Severity

# name -> what it replaces (where it is read)
OVERRIDES = {
    "TQ_BIND_HOST": "the address vLLM binds, instead of the spec's server.host (serve.sh)",
    "TQ_API_KEY_FILE": "the API key file the server reads, instead of server.api_key_file (serve.sh)",
    "TQ_MODEL_DIR": "the model folder served, instead of the build's (serve.sh)",
    "TQ_ENGINE_START": "how the EngineCore starts, forkserver or spawn (launch_vllm.py)",
    "TQ_MASTER_PORT": "a multi-node build's rendezvous port, instead of multinode.master_port (multinode.sh)",
}
VALUE_LIMIT = 256


def _shown(value: str) -> str:
    text = value.encode("unicode_escape").decode("ascii") if not value.isprintable() else value
    return text if len(text) <= VALUE_LIMIT else f"{text[:VALUE_LIMIT]}... ({len(text)} characters)"


def overrides(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The override variables set in the caller's environment, each value shown safely (escaped, cut)."""
    env = os.environ if environ is None else environ
    return {name: _shown(env[name]) for name in OVERRIDES if name in env}


def help_text() -> str:
    """For `up --help`: the variables, and what happens to them."""
    names = ", ".join(OVERRIDES)
    return (
        f"Environment: {names} change what serve.sh starts (address, key file, model folder, engine start, "
        "rendezvous port); when set, up warns (TQ427), records them in state.json and status shows them."
    )


def warning(found: dict[str, str]) -> Finding:
    return Finding(
        "TQ427",
        Severity.WARN,
        "the caller's environment overrides the build: " + ", ".join(f"{k}={v}" for k, v in found.items()),
        {"env_overrides": found, "what": {k: OVERRIDES[k] for k in found}},
        f"unset {' '.join(found)} to start the build as it was built, or keep them knowingly",
        "runtime",
    )


def blame(finding: Finding, found: dict[str, str]) -> None:
    """A failed start's finding names the overrides that were in effect: they may be its cause."""
    if not found:
        return
    finding.evidence["env_overrides"] = found
    finding.remediation = (
        f"the caller's environment set {', '.join(f'{k}={v}' for k, v in found.items())}, which serve.sh reads "
        f"instead of the build's own values: unset them and start again if they are the cause; " + finding.remediation
    )
