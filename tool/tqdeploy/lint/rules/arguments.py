"""vLLM's own arguments (TQ301-TQ309, TQ312, TQ314).

TQ301-TQ309 are found in one walk over the arguments, the way vLLM's FlexibleArgumentParser reads them
(tqdeploy.lint.validate.parse_vllm_args: unknown options, values, switches, prefixes and repeats depend
on each other's spans); each rule here reports its id from that walk. A false-advice entry (TQ310) about
the same token replaces the generic finding: it names the real replacement.
"""

from __future__ import annotations

from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.lint.live import live_findings, live_vllm_version
from tqdeploy.lint.pysnippet import keyword_choice_findings
from tqdeploy.lint.registry import VLLM_KINDS, LintContext, rule
from tqdeploy.lint.report import lint_finding
from tqdeploy.lint.validate import expand_shell_value, is_unresolved

# Generic parser findings that a catalogue entry about the same token replaces.
REPLACEABLE = {"TQ301", "TQ302", "TQ303", "TQ305", "TQ308"}


def parser_findings(ctx: LintContext, finding_id: str) -> list[Finding]:
    found = [f for f in ctx.parsed.findings if f.id == finding_id]
    if finding_id in REPLACEABLE:
        covered = {f.token for f in ctx.advice}
        found = [f for f in found if f.token not in covered]
    return found


@rule("TQ301", "arguments", "option vLLM does not have")
def unknown_option(ctx: LintContext) -> list[Finding]:
    return parser_findings(ctx, "TQ301")


@rule("TQ302", "arguments", "value not among the option's choices", kinds=(*VLLM_KINDS, "python"))
def invalid_choice(ctx: LintContext) -> list[Finding]:
    if ctx.inv.kind == "python":  # LLM(kv_cache_dtype=...) reaches the same EngineArgs field as the flag
        covered = {f.location for f in ctx.advice}  # a catalogue entry names the real replacement
        return [f for f in keyword_choice_findings(ctx.python_snippet.calls, ctx.schema) if f.location not in covered]
    return parser_findings(ctx, "TQ302")


@rule("TQ303", "arguments", "missing, extra or mistyped value")
def bad_value(ctx: LintContext) -> list[Finding]:
    return parser_findings(ctx, "TQ303")


@rule("TQ304", "arguments", "option of another vLLM release")
def other_release_option(ctx: LintContext) -> list[Finding]:
    return parser_findings(ctx, "TQ304")


@rule("TQ305", "arguments", "on/off switch given a value")
def switch_with_value(ctx: LintContext) -> list[Finding]:
    return parser_findings(ctx, "TQ305")


@rule("TQ306", "arguments", "deprecated option")
def deprecated_option(ctx: LintContext) -> list[Finding]:
    return parser_findings(ctx, "TQ306")


@rule("TQ307", "arguments", "abbreviated option")
def abbreviated_option(ctx: LintContext) -> list[Finding]:
    return parser_findings(ctx, "TQ307")


@rule("TQ308", "arguments", "value the engine refuses at start-up")
def engine_value(ctx: LintContext) -> list[Finding]:
    return parser_findings(ctx, "TQ308")


@rule("TQ309", "arguments", "option given twice")
def repeated_option(ctx: LintContext) -> list[Finding]:
    return parser_findings(ctx, "TQ309")


@rule("TQ312", "arguments", "vLLM's own parser rejects the arguments")
def vllm_parser(ctx: LintContext) -> list[Finding]:
    """Only when vLLM of the target release is importable here and the schema checks found no error."""
    if not _want_live(ctx.live, ctx.schema.version) or any(f.severity is Severity.ERROR for f in ctx.parsed.findings):
        return []

    args = [expand_shell_value(a, ctx.variables) for a in ctx.inv.vllm_args]
    if any(is_unresolved(a) for a in args):  # the shell's run-time values cannot be parsed here
        return []
    return live_findings(args)


def _want_live(live: bool | None, version: str) -> bool:
    if live is False:
        return False

    running = live_vllm_version()
    if running is None or running != version:
        if live:
            raise TQError(
                f"live validation needs vLLM {version} importable here (found: {running or 'none'})",
                "run tqdeploy with the interpreter of a venv that has that vLLM, or drop --live",
            )
        return False
    return True


@rule("TQ314", "arguments", "--config file not checked")
def config_file(ctx: LintContext) -> list[Finding]:
    """--config FILE: vLLM reads more options from a YAML file that this lint does not see."""
    occ = ctx.parsed.last("config")
    if occ is None or not occ.value:
        return []
    return [
        lint_finding(
            "TQ314",
            Severity.INFO,
            "--config",
            f"options inside {occ.value} are not checked (vLLM merges them into the command line)",
            "lint them as flags: tqdeploy lint -- vllm serve MODEL --flag ... (same keys, `--` prefixed)",
            None,
            occ.start,
        )
    ]
