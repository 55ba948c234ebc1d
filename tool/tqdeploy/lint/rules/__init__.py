"""Every lint rule, one module per area (the catalogue: tqdeploy.lint.rules.areas); importing this package
registers them (tqdeploy.lint.registry) and gives run_rules.
"""

from __future__ import annotations

from tqdeploy.findings import Finding
from tqdeploy.lint.registry import RULES, LintContext, Rule
from tqdeploy.lint.rules import areas  # noqa: F401  (registers every area's rules)


def load_rules() -> dict[str, Rule]:
    """Every rule, registered by the areas' imports (the registry itself imports no rule)."""
    return RULES


def run_rules(ctx: LintContext) -> list[Finding]:
    findings: list[Finding] = []
    for rid in sorted(RULES):
        r = RULES[rid]
        if r.applies(ctx):
            findings.extend(r.run(ctx))
    return findings
