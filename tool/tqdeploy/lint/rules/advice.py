"""The false-advice catalogue (TQ310): wrong launch advice found in the arguments or anywhere in the text."""

from __future__ import annotations

from tqdeploy.findings import Finding
from tqdeploy.lint.registry import ALL_KINDS, LintContext, rule


@rule("TQ310", "advice", "false advice (checks/false_advice.json)", kinds=(*ALL_KINDS, "python"))
def false_advice(ctx: LintContext) -> list[Finding]:
    return ctx.advice + ctx.text_advice
