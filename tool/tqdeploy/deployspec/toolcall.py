"""`vllm.tool_calling = true`: the vLLM flags a model family needs for tool calls, only where verified.

Qwen3.5 / Qwen3.6: `--enable-auto-tool-choice --tool-call-parser qwen3_coder --reasoning-parser qwen3`
(vllm-project/recipes Qwen/Qwen3.6.md). Checked in the pinned vLLM 0.32.0: `qwen3_coder` is registered in
vllm/tool_parsers/__init__.py (Qwen3EngineToolParser), `qwen3` in vllm/reasoning/__init__.py
(Qwen3ParserReasoningAdapter); the flags are in vllm/entrypoints/launchers/cli_args.py
(enable_auto_tool_choice, tool_call_parser) and vllm/engine/arg_utils.py (--reasoning-parser).
Other families are refused until someone verifies their parsers the same way.
"""

from __future__ import annotations

import re

from tqdeploy.deployspec.model import Spec
from tqdeploy.errors import TQError

QWEN3_5_FLAGS = ["--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder", "--reasoning-parser", "qwen3"]
# (pattern on the model's name, family label, flags)
FAMILIES = [(re.compile(r"^qwen3\.[56]([-_.]|$)", re.I), "Qwen3.5/3.6", QWEN3_5_FLAGS)]
OWNED = ("--enable-auto-tool-choice", "--tool-call-parser", "--reasoning-parser")


def model_name(spec: Spec) -> str:
    """The checkpoint's own name: the repo id's last part, or the local folder's name."""
    return (spec.model.repo or spec.model.path or "").rstrip("/").rsplit("/", 1)[-1]


def tool_call_flags(spec: Spec) -> list[str]:
    if not spec.vllm.tool_calling:
        return []
    given = [a for a in spec.vllm.extra_args if a.split("=", 1)[0] in OWNED]
    if given:
        raise TQError(
            f"vllm.tool_calling = true and vllm.extra_args sets {given[0]} too",
            "drop the tool-calling flags from vllm.extra_args: tool_calling renders them",
        )
    name = model_name(spec)
    for pattern, _family, flags in FAMILIES:
        if pattern.search(name):
            return list(flags)
    raise TQError(
        f"vllm.tool_calling: no verified tool-call parser for model {name!r} (verified: Qwen3.5/3.6)",
        "set tool_calling = false and put --enable-auto-tool-choice --tool-call-parser NAME in vllm.extra_args, "
        "with NAME from vLLM's parser list (vllm serve --help: --tool-call-parser)",
    )
