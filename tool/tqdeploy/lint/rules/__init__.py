"""Every lint rule, one module per area; importing this package registers them (tqdeploy.lint.registry)
and gives run_rules.

arguments   TQ301-TQ309, TQ312, TQ314  vLLM's own arguments as its parser reads them
advice      TQ310                      the false-advice catalogue (checks/false_advice.json)
image       TQ311, TQ313               which image / vLLM release the command runs
turboquant  TQ320, TQ321, TQ348, TQ349 TurboQuant KV dtypes with other options and platforms
exposure    TQ322, TQ323               who can reach the server, credentials on argv
cachekey    TQ344                      VLLM_API_KEY in vLLM's environment where it enters the compile cache
docker      TQ330-TQ334                docker run options around a vLLM image
model       TQ340-TQ343                the checkpoint (--model) and the GPUs (--snapshot / --gpu)
multinode   TQ345-TQ347                a multi-node start's ports, interface variables and parallel layout
python      TQ315                      LLM(...) / EngineArgs(...) keywords in a Python snippet (--file x.py)
"""

from __future__ import annotations

from tqdeploy.findings import Finding
from tqdeploy.lint.registry import RULES, LintContext, Rule
from tqdeploy.lint.rules import (  # noqa: F401
    advice,
    arguments,
    cachekey,
    docker,
    exposure,
    image,
    model,
    multinode,
    python,
    turboquant,
)


def load_rules() -> dict[str, Rule]:
    """Every rule, registered by the imports above (the registry itself imports no rule)."""
    return RULES


def run_rules(ctx: LintContext) -> list[Finding]:
    findings: list[Finding] = []
    for rid in sorted(RULES):
        r = RULES[rid]
        if r.applies(ctx):
            findings.extend(r.run(ctx))
    return findings
