"""The command examples of README.md, docs/*.md and every command's `-h` (tqdeploy/cliexamples.py EXAMPLES) are
the tool's own command lines: each is parsed by the real CLI (a command, option or value the tool no longer
has fails here), and the ones this machine can run without vLLM, a GPU, Docker or the network are run, in
document order in one folder per document, and must not end in a usage error (2) or a bug (3).

An example is a line of a fenced block that starts with `tqdeploy ` (a trailing `# comment` dropped, `\\`
continuations joined). Synopsis lines (`[--out FILE]`, `cold|warm|both`, `...`) are parsed twice: without
the optional parts and with all of them. Placeholders name real files here: a checkpoint (/models/...,
REPO@REV, DIR) is the Qwen3.6-27B fixture, host.json the recorded H200 snapshot, serve.sh a launch script.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
import typer

from tqdeploy.cli import app
from tqdeploy.cliexamples import EXAMPLES

REPO = Path(__file__).resolve().parent.parent
QWEN36 = REPO / "tests" / "fixtures" / "models" / "qwen3.6-27b"
H200 = REPO / "tests" / "fixtures" / "hosts" / "h200-1gpu.json"
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# What runs here: no vLLM server, no GPU, no Docker engine, no network (the doctor gets --offline).
RUNNABLE = {"explain", "lint", "plan", "doctor", "build", "init"}
NOT_RUN_HERE = ("--image", "--resolve-digests", "--start", "--url", "--check/--no-check")
MODEL_REF = re.compile(r"^(/models/\S+|DIR|Qwen/Qwen3\.6-27B(@\S+)?|REPO@REV)$", re.I)
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]+(\.[a-z.]+)?$")  # FILE, BUILD, FILE.tar.gz: nothing here to name


def fenced_examples(doc: Path) -> list[tuple[str, str]]:
    """(where, command line) of each `tqdeploy ...` line in the document's fenced blocks."""
    out, block, pending = [], False, ""
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip().startswith("```"):
            block = not block
            continue
        text = (pending + " " + line.strip()).strip() if pending else line.strip()
        if not block or not text.startswith("tqdeploy "):
            pending = ""
            continue
        if text.endswith("\\"):
            pending = text[:-1]
            continue
        pending = ""
        out.append((f"{doc.name}:{number}", re.sub(r"\s+#.*$|\s+\(or .*\)$", "", text)))
    return out


# placeholders for an option's value that must parse as one: a count, seconds, a duration (`--logs-since 5m`)
VALUE_PLACEHOLDERS = {"N": "1", "SECONDS": "1", "DURATION": "5m"}


def variants(line: str) -> list[list[str]]:
    """The argv of an example; a synopsis gives its shortest and its longest form."""
    line = re.sub(r"\s+\.\.\.(?=\s|\]|$)", "", line.replace("...]", "]").replace("]...", "]"))
    shortest = re.sub(r"\s*\[[^\[\]]*\]", "", line)
    longest = re.sub(r"\[([^\[\]]*)\]", r"\1", line)
    forms = []
    for form in dict.fromkeys((shortest, longest)):
        argv = [VALUE_PLACEHOLDERS.get(a, a) for a in shlex.split(form)[1:]]
        forms.append([a.split("|")[0] if "|" in a and not a.startswith("-") else a.split("/--no-")[0] for a in argv])
    return forms


# Eager options whose callbacks act while parsing: typer's completion ones edit ~/.bashrc, so never here.
ACTS_WHILE_PARSING = ("--install-completion", "--show-completion")


def parse(argv: list[str]) -> None:
    """Parse as the CLI does, without running: a usage error raises (help and --version end it, exit 0)."""
    if set(argv) & set(ACTS_WHILE_PARSING):
        return
    try:
        _parse(argv)
    except (typer.Exit, SystemExit) as done:  # -h, --help, --version: printed and exit 0
        assert getattr(done, "exit_code", getattr(done, "code", 0)) in (0, None), argv


def _parse(argv: list[str]) -> None:
    group = typer.main.get_command(app)
    with group.make_context("tqdeploy", list(argv), resilient_parsing=False) as ctx:
        name, command, rest = group.resolve_command(ctx, list(argv))
        assert command is not None, argv
        command.make_context(name, rest, parent=ctx).close()


def _all_examples():
    for doc in DOCUMENTS:
        for where, line in fenced_examples(doc):
            yield pytest.param(line, id=where)
    for command, lines in EXAMPLES.items():
        for i, line in enumerate(lines):
            yield pytest.param(line, id=f"help-{command or 'tqdeploy'}-{i}")


@pytest.mark.parametrize("line", list(_all_examples()))
def test_every_documented_command_line_parses(line):
    for argv in variants(line):
        parse(argv)


def test_the_docs_have_examples_to_check():
    found = {where for doc in DOCUMENTS for where, _ in fenced_examples(doc)}
    assert len(found) >= 30 and any(w.startswith("README.md") for w in found), found


def _runnable(argv: list[str]) -> bool:
    unnamed = [a for a in argv if PLACEHOLDER.match(a) and not MODEL_REF.match(a)]
    return bool(argv) and argv[0] in RUNNABLE and not unnamed and not any(a in NOT_RUN_HERE for a in argv)


def _here(argv: list[str], folder: Path) -> list[str]:
    """The example with its placeholders pointing at real files in folder (made once, when first named)."""
    out = []
    for i, arg in enumerate(argv):
        before = argv[i - 1] if i else ""
        if MODEL_REF.match(arg) or arg == "M":
            arg = str(QWEN36)
        elif arg.endswith(".json") and before == "--snapshot" and not (folder / arg).exists():
            shutil.copy(H200, folder / arg)
        elif arg == "serve.sh" and before in ("--file", "-f") and not (folder / arg).exists():
            (folder / arg).write_text(f"#!/bin/sh\nexec vllm serve {QWEN36} --kv-cache-dtype turboquant_4bit_nc\n")
        out.append(arg)
    if out[0] == "doctor" and "--offline" not in out:
        out.insert(1, "--offline")  # no network here: the mirror test would only time out
    if out[0] == "init" and "--no-probe" not in out:
        out.insert(1, "--no-probe")
    return out


def _documents_with_runnable_examples():
    for doc in DOCUMENTS:
        lines = [(where, argv) for where, line in fenced_examples(doc) for argv in variants(line)[:1]]
        if any(_runnable(argv) for _, argv in lines):
            yield pytest.param(lines, id=doc.name)
    for command, lines in EXAMPLES.items():  # a command's help examples in order, in a folder of their own
        argvs = [(f"help-{command or 'tqdeploy'}-{i}", variants(line)[0]) for i, line in enumerate(lines)]
        if any(_runnable(argv) for _, argv in argvs):
            yield pytest.param(argvs, id=f"help-{command or 'tqdeploy'}")


@pytest.mark.parametrize("examples", list(_documents_with_runnable_examples()))
def test_the_examples_this_machine_can_run_run(run_cli, tmp_path, monkeypatch, examples):
    monkeypatch.chdir(tmp_path)
    ran = []
    for where, argv in examples:
        if not _runnable(argv):
            continue
        args = _here(argv, tmp_path)
        if args[0] == "build" and "tqdeploy.toml" in args and not (tmp_path / "tqdeploy.toml").exists():
            assert run_cli("init", "--no-probe", "--model", str(QWEN36))[0] == 0  # the spec the page assumes
        code, out, err = run_cli(*args)
        assert code in (0, 1), f"{where}: tqdeploy {shlex.join(args)} -> {code}\n{err}"
        assert "internal error" not in err and "Traceback" not in err, where
        ran.append(where)
    print(f"ran {len(ran)} of {len(examples)}: {', '.join(ran)}")
    assert ran
