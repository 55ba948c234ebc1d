"""Credentials written out in a command: found here, redacted from every line lint prints."""

from __future__ import annotations

import re

from tqdeploy.lint.command import Invocation
from tqdeploy.lint.validate import ParsedArgs

_SECRET_NAME = re.compile(r"(TOKEN|API_KEY|SECRET|PASSWORD|ACCESS_KEY)", re.I)
SECRET_OPTIONS = ("api_key", "hf_token")  # vLLM options whose value is a credential
_SECRET_OPTION_NAME = re.compile(r"^--[\w-]*(token|api[-_]?key|secret|password)$", re.I)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def is_literal(value: str) -> bool:
    """A value written out, not a reference to the caller's environment ($VAR, ${VAR}, $(cmd))."""
    return bool(value) and not value.startswith("$")


def secret_values(inv: Invocation, parsed: ParsedArgs | None) -> set[str]:
    """Every credential written out in the command: redacted from all output."""
    found = {v for k, v in inv.env.items() if is_secret_name(k) and is_literal(v)}
    if parsed is not None:
        for occ in parsed.occurrences:
            if occ.option.dest in SECRET_OPTIONS:
                found.update(v for v in occ.values if is_literal(v))
    argv = inv.argv
    for i in range(inv.vllm_start, inv.vllm_end):  # options vLLM does not know, e.g. --hf_api_token X
        name, has_eq, inline = argv[i].partition("=")
        if _SECRET_OPTION_NAME.match(name):
            value = inline if has_eq else (argv[i + 1] if i + 1 < inv.vllm_end else "")
            if is_literal(value) and not value.startswith("-"):
                found.add(value)
    return found
