"""The false-advice catalogue (checks/false_advice.json): wrong launch advice, caught with its replacement.

Pattern kinds:
  flag        an option name in vLLM's arguments (known to vLLM or not), e.g. --awq-quant-config-path
  flag_value  an option whose value matches value_regex, e.g. --quantization turboquant
  text        a regex over the whole command or script text (comments included), e.g. vllm-bench
  rule        caught by a lint rule (the entry documents it; the rule's finding carries the fix)
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tqdeploy.errors import TQError
from tqdeploy.findings import Edit, Finding, Severity
from tqdeploy.lint.command import Invocation
from tqdeploy.lint.report import lint_finding
from tqdeploy.resources import data_dir
from tqdeploy.vllmfacts.schema import normalize

if TYPE_CHECKING:
    from tqdeploy.lint.pysnippet import Call

CATALOGUE_ID = "tqdeploy.false-advice/1"
FINDING_ID = "TQ310"


@dataclass(frozen=True)
class Entry:
    id: str
    severity: Severity
    pattern: dict[str, Any]
    why: str
    replacement: str
    citation: str
    tokens: tuple[str, ...] | None  # what the matched option becomes under --fix (None: no automatic fix)
    bad: str
    good: str


@lru_cache(maxsize=1)
def load_catalogue() -> tuple[Entry, ...]:
    path = data_dir("checks") / "false_advice.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TQError(f"cannot read the false-advice catalogue {path}: {exc}", "reinstall tqdeploy") from exc
    if data.get("schema") != CATALOGUE_ID:
        raise TQError(f"{path} is not a {CATALOGUE_ID} document", "reinstall tqdeploy")
    entries = []
    for e in data["entries"]:
        tokens = e.get("tokens")
        entries.append(
            Entry(
                e["id"],
                Severity(e.get("severity", "error")),
                e["pattern"],
                e["why"],
                e["replacement"],
                e["citation"],
                tuple(tokens) if tokens is not None else None,
                e.get("bad", ""),
                e.get("good", ""),
            )
        )
    return tuple(entries)


def _finding(entry: Entry, flag: str, token: int, edit: Edit | None) -> Finding:
    return lint_finding(
        FINDING_ID,
        entry.severity,
        flag,
        f"{entry.id}: {entry.why}",
        f"{entry.replacement} [{entry.citation}]",
        edit,
        token,
    )


def _option_spans(argv: list[str], start: int, end: int) -> Iterator[tuple[int, str, str | None, int]]:
    """(index, name, value, span_end) for every --option token in argv[start:end]."""
    i = start
    while i < end:
        tok = argv[i]
        if tok.startswith("--"):
            name, has_eq, inline = tok.partition("=")
            if has_eq:
                yield i, normalize(name), inline, i + 1
            elif i + 1 < end and not argv[i + 1].startswith("-"):
                yield i, normalize(name), argv[i + 1], i + 2
            else:
                yield i, normalize(name), None, i + 1
        i += 1


def match_invocation(inv: Invocation, aliases: dict[str, str]) -> list[Finding]:
    """Flag and flag_value entries against the vLLM arguments; aliases maps e.g. -q to --quantization."""
    out: list[Finding] = []
    argv = inv.argv
    spans = list(_option_spans(argv, inv.vllm_start, inv.vllm_end))
    # short aliases such as -q turboquant
    for i in range(inv.vllm_start, inv.vllm_end):
        tok = argv[i]
        if tok in aliases and not tok.startswith("--"):
            value = argv[i + 1] if i + 1 < inv.vllm_end else None
            spans.append((i, aliases[tok], value, i + 2 if value is not None else i + 1))
    for entry in load_catalogue():
        kind = entry.pattern.get("kind")
        if kind not in ("flag", "flag_value"):
            continue
        want = normalize(entry.pattern["flag"])
        for index, name, value, span_end in spans:
            if name != want:
                continue
            if kind == "flag_value":
                if value is None or not re.search(entry.pattern["value_regex"], value):
                    continue
                has_eq = "=" in argv[index]
                end = index + 1 if has_eq else span_end
            else:
                end = span_end  # a flag that does not exist goes together with its value
            edit = Edit(index, end, entry.tokens) if entry.tokens is not None else None
            out.append(_finding(entry, argv[index].split("=", 1)[0], index, edit))
    return out


def match_keywords(calls: list[Call]) -> list[Finding]:
    """Flag and flag_value entries against the literal keywords of LLM(...) / EngineArgs(...) calls
    (tqdeploy.lint.pysnippet.Call): LLM's keywords become EngineArgs' fields, the fields `vllm serve` fills from
    its flags (vllm/engine/arg_utils.py add_cli_args), so LLM(quantization="turboquant") is the same mistake
    as --quantization turboquant and gets the same entry (FA001), not a pass."""
    out: list[Finding] = []
    for call in calls:
        for name, node in call.keywords:
            if not (isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, str))):
                continue
            value = str(node.value).lower() if isinstance(node.value, bool) else str(node.value)
            flag = normalize("--" + name.replace("_", "-"))
            for entry in load_catalogue():
                kind = entry.pattern.get("kind")
                if kind not in ("flag", "flag_value") or normalize(entry.pattern["flag"]) != flag:
                    continue
                if kind == "flag_value" and not re.search(entry.pattern["value_regex"], value):
                    continue
                out.append(_finding(entry, f"line {call.line} {name}=", -1, None))
    return out


def match_text(text: str) -> list[Finding]:
    """Text entries against a command line or a whole script."""
    out = []
    for entry in load_catalogue():
        if entry.pattern.get("kind") != "text":
            continue
        m = re.search(entry.pattern["regex"], text, flags=re.M)
        if m:
            out.append(_finding(entry, m.group(0).strip()[:60], -1, None))
    return out
