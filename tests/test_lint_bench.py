"""The lint benchmark feeds vLLM's parser exactly the arguments the linter checks, from a script the
linter rejects (so both sides do the same validation work on the same input)."""

from bench.lint import BLOG_SCRIPT, vllm_args
from tqdeploy.lint import lint_script


def test_benchmark_script_args_and_verdict():
    args = vllm_args(BLOG_SCRIPT)
    assert args[0] == "Qwen/Qwen3.6-27B" and args[-1] == "--enforce-eager"
    assert "2>&1" not in args and "tee" not in args  # the pipe ends the command
    report = lint_script(BLOG_SCRIPT, live=False)
    assert report.errors
    assert {"TQ301", "TQ310"} <= {f.id for f in report.findings}
