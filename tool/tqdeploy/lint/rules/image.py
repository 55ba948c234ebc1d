"""Which image, and so which vLLM release, the command runs (TQ311, TQ313)."""

from __future__ import annotations

from tqdeploy.findings import Finding, Severity
from tqdeploy.lint.registry import ALL_KINDS, DOCKER_KINDS, LintContext, rule
from tqdeploy.lint.report import lint_finding


@rule("TQ311", "image", "no argument schema for the image's vLLM release", kinds=ALL_KINDS)
def unknown_release(ctx: LintContext) -> list[Finding]:
    """Found while choosing the schema (tqdeploy.lint.target_version), before the arguments are read."""
    return list(ctx.target)


@rule("TQ313", "image", "not a vLLM image", kinds=DOCKER_KINDS)
def other_image(ctx: LintContext) -> list[Finding]:
    inv = ctx.inv
    if inv.kind != "docker-other":
        return []
    return [
        lint_finding(
            "TQ313",
            Severity.INFO,
            "image",
            f"image {inv.image} is not a vLLM image: only the docker options were checked",
            "lint the command its entrypoint runs (e.g. the image's serve.sh) with --file",
            None,
            inv.image_index,
        )
    ]
