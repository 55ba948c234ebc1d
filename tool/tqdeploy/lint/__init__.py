"""`tqdeploy lint`: is a vLLM launch command valid for the pinned vLLM, and is it a good idea?

    report = lint_command(["vllm", "serve", "Qwen/Qwen3.6-27B", "--kv-cache-dtype", "turboquant_4bit_nc"])
    report = lint_script(Path("serve.sh").read_text(), model=facts, host=snapshot)
    report.findings, report.fixed_argv, report.errors, report.to_dict(), report.render(console)

Layers: command/script (find the invocation) -> validate (read the arguments like the parser of the vLLM
release, whose schema is extracted from vLLM) -> the rules in tqdeploy.lint.rules, one function per finding
id, run from the registry (tqdeploy.lint.registry) in id order: arguments, false advice (catalogue), image,
TurboQuant, exposure, docker, model (via tqdeploy.model.compat), vLLM's own parser when importable (live).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.findings import Finding, Severity
from tqdeploy.lint import catalogue
from tqdeploy.lint.catalogue import match_text
from tqdeploy.lint.command import Invocation, find_invocation
from tqdeploy.lint.parsed import ParsedArgs
from tqdeploy.lint.pysnippet import Snippet, find_calls, literal_values, load_api
from tqdeploy.lint.registry import VLLM_KINDS, LintContext
from tqdeploy.lint.report import LintReport, apply_edits, lint_finding, shell_join
from tqdeploy.lint.rules import run_rules
from tqdeploy.lint.script import find_command
from tqdeploy.lint.secrets import secret_values
from tqdeploy.lint.validate import expand_shell_value, parse_vllm_args
from tqdeploy.model.facts import ModelFacts
from tqdeploy.pins import DEFAULT_VLLM_VERSION
from tqdeploy.safeio import MIB, FileRefused, read_bytes
from tqdeploy.snapshot import HostSnapshot
from tqdeploy.vllmfacts.schema import available_versions, load_schema

__all__ = ["lint_command", "lint_script", "lint_source", "LintReport"]


def target_version(vllm_version: str | None, inv: Invocation) -> tuple[str, list[Finding]]:
    """The vLLM release whose schema the command is checked against, and a TQ311 finding when the
    image's own release has no schema here."""
    if vllm_version:
        return vllm_version.lstrip("v"), []
    image_version = inv.image_version
    if image_version is None:
        return DEFAULT_VLLM_VERSION, []
    if image_version in available_versions():
        return image_version, []
    return DEFAULT_VLLM_VERSION, [
        lint_finding(
            "TQ311",
            Severity.WARN,
            "image",
            f"no argument schema for vLLM {image_version} (image {inv.image}); checked against "
            f"{DEFAULT_VLLM_VERSION} instead",
            f"use an image of a version tqdeploy knows ({', '.join(available_versions())}) or pass --vllm-version",
            None,
            inv.image_index,
        )
    ]


def _lint(
    argv: list[str],
    text: str,
    extra_env: dict[str, str],
    *,
    vllm_version: str | None,
    model: ModelFacts | None,
    host: HostSnapshot | None,
    live: bool | None,
    variables: dict[str, str] | None = None,
    variant: str | None = None,
) -> LintReport:
    inv = find_invocation(argv)
    for name, value in extra_env.items():
        inv.env.setdefault(name, value)
    text_advice = catalogue.match_text(text)
    if inv.kind == "unknown" and not text_advice:
        raise TQError(
            "no vLLM command found (expected `vllm serve ...`, `python -m "
            "vllm.entrypoints.openai.api_server ...` or `docker run ... IMAGE ...`)",
            "pass the command after `--`: tqdeploy lint -- vllm serve MODEL --flag ...",
        )
    version, target = target_version(vllm_version, inv)
    ctx = LintContext(
        inv=inv,
        schema=load_schema(version),
        text=text,
        variables=variables or {},
        model=model,
        host=host,
        live=live,
        target=target,
        text_advice=text_advice,
        variant=variant,
    )
    if inv.kind in VLLM_KINDS:
        ctx.parsed = parse_vllm_args(inv.argv, inv.vllm_start, inv.vllm_end, ctx.schema, variables)
    findings = run_rules(ctx)
    _no_repeated_options(findings, ctx)
    fixed = apply_edits(inv.argv, [f.edit for f in findings if f.edit is not None])
    return LintReport(
        vllm_version=ctx.schema.version,
        command=list(inv.argv),
        fixed_argv=fixed,
        findings=findings,
        secret_values=secret_values(inv, ctx.parsed),
        flag_values=_flag_values(ctx.parsed, variables or {}),
    )


def _flag_values(parsed: ParsedArgs, variables: dict[str, str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for occ in parsed.occurrences:
        if occ.values:
            values[occ.option.dest] = expand_shell_value(occ.values[-1], variables)
        else:
            values[occ.option.dest] = "false" if occ.name.startswith("--no-") else "true"
    return values


def _shell_wrapper(argv: list[str]) -> tuple[list[str], list[str]] | None:
    """(prefix, inner argv) for `sh -c "vllm serve ..."` / `bash -c ...` (compose and k8s commands)."""
    if len(argv) >= 3 and re.fullmatch(r"(.*/)?(ba|da)?sh", argv[0]) and argv[1] == "-c":
        try:
            return argv[:2], shlex.split(argv[2])
        except ValueError:
            return None
    return None


def lint_command(
    argv: list[str],
    *,
    vllm_version: str | None = None,
    model: ModelFacts | None = None,
    host: HostSnapshot | None = None,
    live: bool | None = None,
    variant: str | None = None,
) -> LintReport:
    """Lint one command line (already split into argv); live=None validates with vLLM when importable; variant is
    the spec's ("gpu"/"cpu") when a build lints the command it renders (the argv alone does not say)."""
    wrapped = _shell_wrapper(list(argv))
    inner, text = (list(argv), " ".join(argv)) if wrapped is None else (wrapped[1], argv[2])
    report = _lint(inner, text, {}, vllm_version=vllm_version, model=model, host=host, live=live, variant=variant)
    if wrapped is None:
        return report
    prefix = wrapped[0]
    changed = report.changed
    report.command = [*prefix, argv[2]]
    report.fixed_argv = [*prefix, shell_join(report.fixed_argv)] if changed else list(report.command)
    return report


def _no_repeated_options(findings: list[Finding], ctx: LintContext) -> None:
    """A fix that would add an option the command already sets elsewhere (`--quantization turboquant
    --kv-cache-dtype fp8`: the advice's fix is `--kv-cache-dtype turboquant_4bit_nc`) would give it twice, the
    last one winning silently: the fix then only drops the wrong part, and says which setting stays."""
    for f in findings:
        edit = f.edit
        if edit is None or not edit.tokens or not edit.tokens[0].startswith("--"):
            continue
        opt = ctx.schema.lookup(edit.tokens[0].split("=", 1)[0])
        kept = [
            o
            for o in ctx.parsed.occurrences
            if opt is not None
            and o.option.dest == opt.dest
            and not edit.start <= o.start < max(edit.end, edit.start + 1)
        ]
        if kept:
            setting = f"{kept[-1].name} {kept[-1].value}" if kept[-1].value is not None else kept[-1].name
            f.edit = replace(edit, tokens=())
            f.remediation += f" (the command already sets {setting}: --fix only drops {f.location or 'this'})"


def lint_source(argv: list[str] | None = None, file: str | Path | None = None, **options: Any) -> LintReport:
    """Lint a command given as argv or the vLLM command in a script file (exactly one of them)."""
    argv = list(argv or [])
    if file is not None and argv:
        raise TQError("give either a command after `--` or --file, not both", "tqdeploy lint --file serve.sh")
    if file is None and not argv:
        raise TQError(
            "nothing to lint", "tqdeploy lint -- vllm serve MODEL --flag ...  or  tqdeploy lint --file serve.sh"
        )
    if file is None:
        snippet = python_c_snippet(argv)
        if snippet is not None:  # `python3 -c 'from vllm import LLM; ...'`: the code, as --file x.py reads it
            return lint_python(snippet, name="the -c code", **options)
        return lint_command(argv, **options)
    text = read_script(Path(file))
    lock = build_lock(Path(file))
    if options.get("vllm_version") is None:
        options["vllm_version"] = build_lock_vllm_version(lock)
    if options.get("variant") is None:  # a build's CPU serve.sh: TQ348 knows it only from the build
        options["variant"] = build_lock_variant(lock)
    if Path(file).suffix == ".py":
        return lint_python(text, name=str(file), **options)
    return lint_script(text, name=str(file), **options)


def build_lock(script: Path) -> dict[str, Any]:
    """The tqdeploy.lock.json beside a script in a build folder, read bounded; {} when there is none or it is
    not a JSON object."""
    lock = script.parent / "tqdeploy.lock.json"
    if not lock.is_file():
        return {}
    try:
        data = json.loads(read_bytes(lock, MIB, "the build's lock file"))
    except (FileRefused, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def build_lock_vllm_version(lock: dict[str, Any]) -> str | None:
    """The vLLM release a build pinned (its lock): a rendered serve.sh is linted against the release it runs, not
    tqdeploy's default. None when the lock does not name a version."""
    try:
        version = lock.get("pins", {}).get("vllm", {}).get("version")
    except AttributeError:
        return None
    return version if isinstance(version, str) and re.fullmatch(r"\d+\.\d+\.\d+", version) else None


def build_lock_variant(lock: dict[str, Any]) -> str | None:
    """The build's variant ("gpu" or "cpu") as its lock records it (the cache fingerprint's factors)."""
    try:
        variant = lock.get("cache_fingerprint", {}).get("factors", {}).get("variant")
    except AttributeError:
        return None
    return variant if variant in ("gpu", "cpu") else None


_PYTHON = re.compile(r"^(.*/)?python(\d+(\.\d+)?)?$")


def python_c_snippet(argv: list[str]) -> str | None:
    """The code of `python[3] -c CODE ...` (interpreter options before -c allowed), else None. A module run
    (`python -m vllm.entrypoints...`) is a command, not a snippet."""
    if not argv or not _PYTHON.match(argv[0]):
        return None
    for i, arg in enumerate(argv[1:], 1):
        if arg == "-c":
            return argv[i + 1] if i + 1 < len(argv) else None
        if arg.startswith("-c") and len(arg) > 2:
            return arg[2:]
        if not arg.startswith("-") or arg == "-m":
            return None
    return None


def lint_python(
    text: str, *, vllm_version: str | None = None, name: str = "the snippet", **_options: Any
) -> LintReport:
    """Lint the LLM(...) / EngineArgs(...) / AsyncEngineArgs(...) calls of a Python snippet (TQ315)."""
    version = (vllm_version or DEFAULT_VLLM_VERSION).lstrip("v")
    calls = find_calls(text, name)
    if not calls:
        raise TQError(
            f"no LLM(...), EngineArgs(...) or AsyncEngineArgs(...) call in {name}",
            "lint the Python file that builds vLLM, or a shell script: tqdeploy lint --file serve.sh",
        )
    ctx = LintContext(
        inv=Invocation(argv=[], kind="python"),
        schema=load_schema(version),
        text=text,
        snippet=Snippet(calls, load_api(version)),
    )
    # Text entries too (FA002: quantization="turbo" in any Python), unless a keyword entry already names it.
    flagged = {f.location.split()[-1].rstrip("=") for f in ctx.advice}
    ctx.text_advice = [f for f in catalogue.match_text(text) if not f.location.startswith(tuple(flagged) or ("\0",))]
    values = literal_values(calls)
    secrets = {v for k, v in values.items() if k in ("api_key", "hf_token") and v not in ("true", "false")}
    source = [c.source for c in calls]
    return LintReport(
        vllm_version=version,
        command=source,
        fixed_argv=list(source),
        findings=run_rules(ctx),
        secret_values=secrets,
        source=f"python line {calls[0].line}",
        flag_values=values,
    )


MAX_SCRIPT_BYTES = 1 << 20  # launch scripts are a few KiB; /dev/zero or a log passed by mistake is not one


def read_script(path: str | Path) -> str:
    """The script's text: a regular file (a FIFO would block, /dev/zero never ends) of at most 1 MiB.
    O_NONBLOCK makes the open itself return at once on a FIFO; the fstat then refuses it."""
    fix = "pass a launch script (a regular text file of at most 1 MiB)"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise TQError(f"cannot read script {path}: {exc.strerror or exc}", fix) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise TQError(f"cannot read script {path}: not a regular file (a FIFO, device or folder)", fix)
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_SCRIPT_BYTES + 1)
    if len(data) > MAX_SCRIPT_BYTES:
        raise TQError(f"cannot read script {path}: larger than 1 MiB, not a launch script", fix)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TQError(f"cannot read script {path}: not UTF-8 text (byte {exc.start})", fix) from None


def lint_script(
    text: str,
    *,
    vllm_version: str | None = None,
    model: ModelFacts | None = None,
    host: HostSnapshot | None = None,
    live: bool | None = None,
    name: str = "the script",
    variant: str | None = None,
) -> LintReport:
    """Lint the vLLM command inside a shell script; false advice anywhere in the text is reported too.
    name (e.g. the file's path) is what an error about the script calls it; variant is the build's, when known."""
    cmd = find_command(text)
    if cmd is None and not match_text(text):
        raise TQError(
            f"no vLLM command found in {name} (no line starts `vllm serve`, `python -m "
            "vllm.entrypoints.openai.api_server` or `docker run`)",
            "lint the script that launches vLLM, or pass the command: tqdeploy lint -- vllm serve MODEL ...",
        )
    argv = cmd.argv if cmd else []
    report = _lint(
        argv,
        text,
        cmd.env if cmd else {},
        vllm_version=vllm_version,
        model=model,
        host=host,
        live=live,
        variables=cmd.variables if cmd else None,
        variant=variant,
    )
    report.source = f"script line {cmd.line}" if cmd else "script"
    return report
