"""LintReport: the one output of `tqdeploy lint` (Findings plus the corrected command), secrets redacted everywhere."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tqdeploy.errors import shown
from tqdeploy.findings import Edit, Finding, Severity
from tqdeploy.lint.secrets import LintRedactor
from tqdeploy.output import SEVERITY_STYLE, make_console

if TYPE_CHECKING:
    from rich.console import Console

SCHEMA = "tqdeploy.lint/1"
# vLLM option dest -> how serving_values() reads its value.
SERVING_VALUES: dict[str, type] = {
    "tensor_parallel_size": int,
    "max_model_len": int,
    "kv_cache_dtype": str,
    "attention_backend": str,
    "gpu_memory_utilization": float,
    "dtype": str,
}


COMMAND_LIMIT = 20000  # characters of a command, a title or a fix as printed (a 1 MiB script is cut)


def lint_finding(
    id: str, severity: Severity, flag: str, message: str, fix: str = "", edit: Edit | None = None, token: int = -1
) -> Finding:
    """A lint result as a Finding: flag is the option as written (location), token its argv index."""
    return Finding(id=id, severity=severity, title=message, remediation=fix, location=flag, edit=edit, token=token)


def finding_dict(f: Finding) -> dict[str, Any]:
    """One finding in the shape every command's JSON has (findings.Finding.to_dict); the option as written
    goes into the evidence as `flag`."""
    data = f.to_dict()
    if f.location:
        data["evidence"] = {**f.evidence, "flag": f.location}
    return data


def apply_edits(argv: list[str], edits: list[Edit]) -> list[str]:
    """Apply non-overlapping edits as if right to left; an edit that overlaps an applied one is skipped.

    Linear after the sort (a 1 MB script has tens of thousands of edits): walking right to left, every
    edit taken so far starts at or after the current one, so the current one overlaps one of them exactly
    when it ends after the leftmost start taken. Insertions (start == end) never overlap. The output is
    then assembled left to right in one pass instead of a list splice per edit."""
    taken: list[Edit] = []
    leftmost = len(argv) + 1
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        if e.start < e.end and leftmost < e.end:
            continue
        taken.append(e)
        leftmost = min(leftmost, e.start)
    out: list[str] = []
    pos = 0
    for e in reversed(taken):
        out.extend(argv[pos : e.start])
        out.extend(e.tokens)
        pos = max(pos, e.end)
    out.extend(argv[pos:])
    return out


_TILDE_PATH = re.compile(r"^~[A-Za-z0-9_./:@%+=,-]*$")


def shell_quote(token: str) -> str:
    """shlex.quote, except that ~/path stays unquoted and $VAR / $(cmd) stay expandable (double quotes),
    so the corrected command means what the original script meant."""
    if _TILDE_PATH.match(token):
        return token
    if "$" in token and "`" not in token:
        return '"' + re.sub(r'(["\\`])', r"\\\1", token) + '"'
    return shlex.quote(token)


def shell_join(argv: list[str]) -> str:
    return " ".join(shell_quote(t) for t in argv)


@dataclass
class LintReport:
    vllm_version: str
    command: list[str]
    fixed_argv: list[str]
    findings: list[Finding] = field(default_factory=list)
    secret_values: set[str] = field(default_factory=set, repr=False)
    source: str = "argv"  # "argv" or a script path
    # {dest: value} of the last occurrence of each vLLM option ("true"/"false" for switches; a script's
    # $VARS expanded where the script sets them). What the command asks of vLLM, for the other checks.
    flag_values: dict[str, str] = field(default_factory=dict, repr=False)
    _redactor: LintRedactor | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def errors(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def changed(self) -> bool:
        return self.fixed_argv != self.command

    @property
    def redactor(self) -> LintRedactor:
        """One tqdeploy.redact Redactor for the whole report, so a secret has one placeholder everywhere."""
        if self._redactor is None:
            self._redactor = LintRedactor(self.secret_values)
        return self._redactor

    def redact(self, text: str) -> str:
        return self.redactor.text(text)

    @property
    def command_text(self) -> str:
        if self.source.startswith("python"):  # the calls of a Python snippet, as written
            return "; ".join(self.redact(call) for call in self.command)
        return shell_join(self.redactor.argv(self.command))

    @property
    def fixed_command_text(self) -> str:
        return shell_join(self.redactor.argv(self.fixed_argv))

    def redacted_findings(self) -> list[Finding]:
        """The findings worst first, every text (title, fix, the flag as written) through the redactor."""
        ordered = sorted(self.findings, key=lambda f: (-f.severity.rank, f.id, f.token))
        r = self.redact
        # A fix is tqdeploy's own text (`export VLLM_API_KEY="$(cat FILE)"`): only the command's own secret
        # values and token formats come out of it, never words the heuristics mistake for values (issue 21.5).
        fix = self.redactor.known
        return [replace(f, title=r(f.title), remediation=fix(f.remediation), location=r(f.location)) for f in ordered]

    def serving_values(self) -> dict[str, Any]:
        """What the command asks of vLLM, typed, for the doctor's checkpoint checks (CheckContext.options);
        a value the shell only knows at run time ($VAR) is left out."""
        out: dict[str, Any] = {}
        for dest, kind in SERVING_VALUES.items():
            raw = self.flag_values.get(dest)
            if raw is None or "$" in raw:
                continue
            try:
                out[dest] = kind(raw)
            except ValueError:  # lint already reports a value of the wrong type
                continue
        return out

    def to_dict(self) -> dict[str, Any]:
        findings = [finding_dict(f) for f in self.redacted_findings()]
        return {
            "schema": SCHEMA,
            "vllm_version": self.vllm_version,
            "command": self.command_text,
            "fixed_command": self.fixed_command_text,
            "findings": findings,
        }

    def render(self, console: Console | None = None) -> None:
        from rich.text import Text

        console = console or make_console()
        data = self.to_dict()
        command = shown(data["command"], COMMAND_LIMIT)
        console.print(Text(f"vLLM {self.vllm_version} command: ", style="bold") + Text(command))
        if not data["findings"]:
            console.print(Text("no findings: the command is valid for this vLLM", style="green"))
        for f in data["findings"]:
            line = Text(f"{f['id']} ", style="bold") + Text(f"{f['severity']:<5}", style=SEVERITY_STYLE[f["severity"]])
            flag = f["evidence"].get("flag")
            line.append(f" {shown(flag)}: " if flag else " ")
            line.append(shown(f["title"], COMMAND_LIMIT))
            console.print(line)
            if f["remediation"]:
                console.print(Text("      fix: " + shown(f["remediation"], COMMAND_LIMIT), style="dim"))
        if self.changed:
            console.print(Text("corrected command (tqdeploy lint --fix):", style="bold"))
            fixed = shown(data["fixed_command"], COMMAND_LIMIT)
            console.print(fixed, markup=False, highlight=False, soft_wrap=True)
