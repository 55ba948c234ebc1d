"""Python launch snippets: LLM(...), EngineArgs(...), AsyncEngineArgs(...) checked against the pinned API.

The keyword names each of them accepts come from vLLM's own source (checks/vllm-python-api/<version>.json,
written by scripts/extract_vllm_python_api.py: LLM.__init__'s parameters plus EngineArgs' fields, since LLM
passes **kwargs on to EngineArgs). The snippet is read with `ast`, never run or imported: a call counts
when its callee is named LLM / EngineArgs / AsyncEngineArgs (bare or as an attribute: vllm.LLM).
"""

from __future__ import annotations

import ast
import difflib
import json
from dataclasses import dataclass, field
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.lint.report import lint_finding
from tqdeploy.resources import data_dir
from tqdeploy.suggest import use_hint
from tqdeploy.vllmfacts.schema import VllmSchema

SCHEMA_ID = "tqdeploy.vllm-python-api/1"
CALLABLES = ("LLM", "EngineArgs", "AsyncEngineArgs")
_FIX = "lint a Python file that builds vLLM with LLM(...), EngineArgs(...) or AsyncEngineArgs(...)"


@dataclass
class Call:
    callee: str  # LLM, EngineArgs or AsyncEngineArgs
    line: int
    source: str  # the call as written
    keywords: list[tuple[str, ast.expr]] = field(default_factory=list)
    positional: int = 0


@dataclass(frozen=True)
class Snippet:
    """A Python snippet under lint (TQ315): its LLM(...) / EngineArgs(...) calls and the pinned vLLM's signatures."""

    calls: list[Call]
    api: dict[str, dict[str, Any]]


def load_api(version: str) -> dict[str, dict[str, Any]]:
    folder = data_dir("checks") / "vllm-python-api"
    path = folder / f"{version}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in folder.glob("*.json"))) or "none"
        raise TQError(
            f"no Python API schema for vLLM {version} (known: {known})",
            f"pass --vllm-version {known.split(',')[0]} (a newer tqdeploy release may know more)",
        )
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("schema") != SCHEMA_ID:
        raise TQError(f"{path} is not a {SCHEMA_ID} document", "reinstall tqdeploy")
    callables: dict[str, dict[str, Any]] = data["callables"]
    return callables


def find_calls(text: str, name: str) -> list[Call]:
    try:
        tree = ast.parse(text, filename=name)
    except SyntaxError as exc:
        raise TQError(f"{name} line {exc.lineno}: not valid Python ({exc.msg})", _FIX) from None
    except (RecursionError, MemoryError, ValueError):  # nesting past the parser's limits, a NUL byte
        raise TQError(f"{name} cannot be parsed as Python (nested too deeply or not text)", _FIX) from None
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if callee in CALLABLES:
            source = ast.get_source_segment(text, node) or callee + "(...)"
            call = Call(callee, node.lineno, " ".join(source.split()), positional=len(node.args))
            call.keywords = [(kw.arg, kw.value) for kw in node.keywords if kw.arg is not None]  # **opts: unknown
            calls.append(call)
    return sorted(calls, key=lambda c: c.line)


def check_call(call: Call, api: dict[str, dict[str, Any]], version: str) -> list[Finding]:
    spec = api[call.callee]
    known = spec["keywords"]
    where = f"line {call.line}"
    out = []
    for name, _ in call.keywords:
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.75)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        out.append(
            lint_finding(
                "TQ315",
                Severity.ERROR,
                f"{where} {name}=",
                f"{call.callee}() of vLLM {version} takes no keyword argument {name!r}{hint}",
                f"use {close[0]}=" if close else f"remove it (the keywords are in {spec['source']})",
            )
        )
    if call.positional > len(spec["positional"]):
        out.append(
            lint_finding(
                "TQ315",
                Severity.ERROR,
                where,
                f"{call.callee}() of vLLM {version} takes {len(spec['positional'])} positional argument(s) "
                f"({', '.join(spec['positional'][:3])}), {call.positional} given",
                "pass the others as keywords",
            )
        )
    return out


def literal_values(calls: list[Call]) -> dict[str, str]:
    """{keyword: value} of constant keyword values, as lint's flag_values has them (for the doctor)."""
    values: dict[str, str] = {}
    for call in calls:
        for name, node in call.keywords:
            if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, str)):
                values[name] = str(node.value).lower() if isinstance(node.value, bool) else str(node.value)
    return values


def keyword_choice_findings(calls: list[Call], schema: VllmSchema) -> list[Finding]:
    """TQ302 for a literal keyword value outside the choices of the `vllm serve` option of the same field: LLM's
    **kwargs become EngineArgs' fields, which `vllm serve`'s parser fills from its flags (vllm/engine/arg_utils.py
    add_cli_args), so LLM(kv_cache_dtype="turboquant_4bit") fails where --kv-cache-dtype turboquant_4bit does."""
    out = []
    for call in calls:
        for name, node in call.keywords:
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            opt = schema.lookup("--" + name.replace("_", "-"))
            if opt is None or not opt.choices or node.value in {str(c) for c in opt.choices}:
                continue
            shown = ", ".join(str(c) for c in opt.choices)
            out.append(
                lint_finding(
                    "TQ302",
                    Severity.ERROR,
                    f"line {call.line} {name}=",
                    f"{name}={node.value!r} is not among {call.callee}()'s choices (vLLM {schema.version}: {shown})",
                    use_hint(node.value, opt.choices),
                )
            )
    return out
