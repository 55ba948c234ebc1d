"""Credentials written out in a command, and the redaction of every line lint (and the doctor's --file) prints.

The redaction is tqdeploy.redact's (the one used by support bundles), in its secrets-only mode: host names
and addresses in a launch command are what lint is about, so they stay. It knows every spelling vLLM's
parser accepts for its secret options (``--api_key``, ``--api-key=K``, the prefixes ``--api-k``/``--ap``)
and token-shaped values anywhere (``--served-model-name hf_...``). On top, lint adds what only it knows:
the values the schema-aware parse read for api_key/hf_token, and those of a misspelt secret option
(``--api-kye K``: vLLM refuses it, the value is a key all the same).
"""

from __future__ import annotations

import difflib

from tqdeploy.lint.command import Invocation
from tqdeploy.lint.parsed import ParsedArgs
from tqdeploy.redact import SECRET_FLAGS, Redactor, is_secret_name, secret_flag

__all__ = ["LintRedactor", "is_literal", "is_secret_name", "secret_values"]

SECRET_OPTIONS = ("api_key", "hf_token")  # vLLM options whose value is a credential


def is_literal(value: str) -> bool:
    """A value written out, not a reference to the caller's environment ($VAR, ${VAR}, $(cmd))."""
    return bool(value) and not value.startswith("$")


class LintRedactor(Redactor):
    """Secrets only, and a shell reference ($HF_TOKEN) is kept: it is the fix lint recommends, not a secret."""

    def __init__(self, secrets: set[str] | frozenset[str] = frozenset()) -> None:
        super().__init__(secrets=sorted(secrets), names=False)

    def secret(self, value: str) -> str:
        stripped = value.strip("'\"")
        if stripped.startswith("$") and " " not in stripped:
            return value
        return super().secret(value)


def _names_a_secret(token: str) -> bool:
    """--api-key, any spelling vLLM reads as it, a secret-named option, or a near miss of one (--api-kye)."""
    if not token.startswith("--"):
        return False
    if secret_flag(token) is not None:
        return True
    name = token[2:].split("=", 1)[0].replace("_", "-").lower()
    return bool(difflib.get_close_matches(name, list(SECRET_FLAGS), n=1, cutoff=0.8))


def secret_values(inv: Invocation, parsed: ParsedArgs | None) -> set[str]:
    """Every credential written out in the command: redacted from all output wherever it appears."""
    found = {v for k, v in inv.env.items() if is_secret_name(k) and is_literal(v)}
    if parsed is not None:
        for occ in parsed.occurrences:
            if occ.option.dest in SECRET_OPTIONS:
                found.update(v for v in occ.values if is_literal(v))
    argv = inv.argv
    for i in range(inv.vllm_start, inv.vllm_end):
        if not _names_a_secret(argv[i]):
            continue
        _, has_eq, inline = argv[i].partition("=")
        value = inline if has_eq else (argv[i + 1] if i + 1 < inv.vllm_end else "")
        if is_literal(value) and not value.startswith("-"):
            found.add(value)
    return found
