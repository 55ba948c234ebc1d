"""Benchmark: `tqdeploy lint --file` on a blog-style serve script against vLLM's own parser.

The other side is what an operator could run instead: vLLM's parser (make_arg_parser over
FlexibleArgumentParser, built as `vllm serve` builds it, as tests/test_lint_live.py does) parsing the
same vLLM arguments, in the vLLM venv (.venv-vllm). Both run as child processes; wall clock and peak
RSS come from each child's own rusage (os.wait4). The script is a copy of the kind of launch script
blog posts publish (tests/fixtures/lint/blog_turboquant_wrong.sh); vLLM's parser stops at the first
argument it rejects, tqdeploy reports every finding and the corrected command.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path

from bench import Row
from bench.doctor import VLLM_PYTHON, measure, tqdeploy_argv
from tqdeploy.lint.command import find_invocation
from tqdeploy.lint.script import find_command

RUNS = int(os.environ.get("TQDEPLOY_BENCH_RUNS", "5"))
VLLM_RUNS = int(os.environ.get("TQDEPLOY_BENCH_VLLM_RUNS", "3"))  # importing vLLM takes ~10-20 s a run

BLOG_SCRIPT = """#!/usr/bin/env bash
# Serve Qwen3.6-27B with TurboQuant on two GPUs (as published in a "TurboQuant in 5 minutes" post).
# NOTE: --enforce-eager is required for TurboQuant, and max-model-len must be 131072.
vllm serve Qwen/Qwen3.6-27B \\
  --quantization turboquant \\
  --max-model-len 131072 \\
  --tensor-parallel-size 2 \\
  --enable-chunked-prefill=False \\
  --gpu-memory-utilisation 0.95 \\
  --host 0.0.0.0 --port 8000 \\
  --enforce-eager 2>&1 | tee vllm.log
"""

# What `vllm serve` does with its arguments before any engine work (vllm/entrypoints/cli/serve.py).
VLLM_PARSE = """\
import sys
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser
make_arg_parser(FlexibleArgumentParser(prog="vllm serve")).parse_args(sys.argv[1:])
"""


def vllm_args(script: str) -> list[str]:
    """The vLLM arguments of the script's command, found the way `tqdeploy lint --file` finds them."""

    cmd = find_command(script)
    if cmd is None:
        raise ValueError("benchmark script has no vLLM command")
    return find_invocation(cmd.argv).vllm_args


def _median(values: list[float]) -> float:
    import statistics

    return statistics.median(values)


def run() -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="tqdeploy-bench-lint-") as tmp:
        script = Path(tmp) / "serve.sh"
        script.write_text(BLOG_SCRIPT, encoding="utf-8")
        ours = [measure(tqdeploy_argv() + ["lint", "--no-live", "--file", str(script)]) for _ in range(RUNS)]
    # exit 1 = errors found, the expected verdict on this script; anything else is a broken benchmark
    if {code for _, _, code in ours} != {1}:
        raise RuntimeError(f"tqdeploy lint exited {sorted({c for _, _, c in ours})} on the blog script (expected 1)")
    theirs = None
    if VLLM_PYTHON.exists():
        argv = [str(VLLM_PYTHON), "-c", VLLM_PARSE, *vllm_args(BLOG_SCRIPT)]
        theirs = [measure(argv) for _ in range(VLLM_RUNS)]
        if {code for _, _, code in theirs} != {2}:  # argparse's exit code for rejected arguments
            raise RuntimeError(
                f"vLLM's parser exited {sorted({c for _, _, c in theirs})} on {shlex.join(argv[3:])} (expected 2)"
            )
    name = f"vLLM's parser in .venv-vllm: make_arg_parser + parse_args (median/max of {VLLM_RUNS})"
    return [
        Row(
            f"lint --file blog script wall (median of {RUNS})",
            _median([w for w, _, _ in ours]),
            _median([w for w, _, _ in theirs]) if theirs else None,
            "s",
            "",
            name if theirs else "",
        ),
        Row(
            f"lint --file blog script peak RSS (max of {RUNS})",
            max(r for _, r, _ in ours),
            max(r for _, r, _ in theirs) if theirs else None,
            "MB",
            "",
            name if theirs else "",
        ),
    ]
