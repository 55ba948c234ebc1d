"""Python launch snippets (TQ315): the keywords of LLM(...), EngineArgs(...), AsyncEngineArgs(...) against the
pinned vLLM's own signatures (tqdeploy.lint.pysnippet, checks/vllm-python-api/)."""

from __future__ import annotations

from tqdeploy.findings import Finding
from tqdeploy.lint.pysnippet import check_call
from tqdeploy.lint.registry import LintContext, rule


@rule("TQ315", "arguments", "keyword arguments of LLM / EngineArgs / AsyncEngineArgs", kinds=("python",))
def python_keywords(ctx: LintContext) -> list[Finding]:
    snippet = ctx.python_snippet
    return [f for call in snippet.calls for f in check_call(call, snippet.api, ctx.schema.version)]
