"""Python launch snippets (TQ315): the keywords of LLM(...), EngineArgs(...), AsyncEngineArgs(...) against the
pinned vLLM's own signatures (tqdeploy.lint.pysnippet, checks/vllm-python-api/)."""

from __future__ import annotations

from tqdeploy.findings import Finding
from tqdeploy.lint.pysnippet import check_call
from tqdeploy.lint.registry import LintContext, rule


@rule("TQ315", "arguments", "keyword arguments of LLM / EngineArgs / AsyncEngineArgs", kinds=("python",))
def python_keywords(ctx: LintContext) -> list[Finding]:
    calls, api = ctx.snippet
    return [f for call in calls for f in check_call(call, api, ctx.schema.version)]
