"""The lazy command table (cli.COMMANDS, vLLM's shape): `--help` and `--version` import no command module and
no heavy SDK, a run imports only its own command, and the table lists exactly the command modules there are,
each with the summary its own help starts with."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import tqdeploy.commands
from tqdeploy.cli import COMMANDS, load_command
from tqdeploy.clihelp import first_sentence

HEAVY = ("pynvml", "docker", "huggingface_hub", "jinja2", "matplotlib", "httpx", "vllm", "torch", "psutil")

# Runs the CLI in a fresh interpreter, then says which command modules and heavy SDKs it imported.
_IMPORTED_BY_A_RUN = """
import contextlib, io, json, sys
from tqdeploy.__main__ import main
heavy_names = sys.argv.pop()  # the last argument: the SDKs to look for, not the CLI's
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
names = sorted(n for n in sys.modules if n.startswith("tqdeploy.commands."))
heavy = [m for m in heavy_names.split(",") if m in sys.modules]
print(json.dumps({"code": code, "commands": names, "heavy": heavy}))
"""


def _imported_by(*argv: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORTED_BY_A_RUN, *argv, ",".join(HEAVY)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["--version"], []])
def test_help_and_version_import_no_command_and_no_sdk(argv):
    assert _imported_by(*argv) == {"code": 0, "commands": [], "heavy": []}


def test_importtime_of_help_names_no_command_module():
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tqdeploy", "--help"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "Commands:" in proc.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    assert "tqdeploy.cli" in imported  # the measurement saw the CLI's own imports
    assert [m for m in imported if m.startswith("tqdeploy.commands")] == []


def test_a_run_imports_only_its_own_command():
    seen = _imported_by("explain", "TQ101")
    assert seen["code"] == 0
    assert set(seen["commands"]) <= {"tqdeploy.commands.explain", "tqdeploy.commands.options"}, seen
    assert "tqdeploy.commands.explain" in seen["commands"]


def test_the_table_names_every_command_module_once():
    present = {m.name for m in pkgutil.iter_modules(tqdeploy.commands.__path__)} - {"options"}
    listed = [line.module for line in COMMANDS.values()]
    assert sorted(listed) == sorted(present)  # each module once, none missing, none that is not there


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_table_line_is_its_commands_own_name_and_summary(name):
    command = load_command(name)
    assert command.name == name
    # the list may stop short of the help's first sentence, never say something else
    assert first_sentence(command.short_help or command.help or "").startswith(COMMANDS[name].summary)


def test_a_mistyped_command_gets_a_did_you_mean(run_cli):
    code, out, err = run_cli("doctr")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "tqdeploy: error: No such command 'doctr'. Did you mean 'doctor'?",
        "  fix: `tqdeploy -h` lists the commands",
    ]


def test_completion_of_a_command_name_reads_the_table(monkeypatch, capsys):
    monkeypatch.setenv("_TQDEPLOY_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", "tqdeploy d")
    monkeypatch.setenv("COMP_CWORD", "1")
    from tqdeploy.cli import app

    with pytest.raises(SystemExit) as done:
        app(prog_name="tqdeploy")
    assert done.value.code == 0
    assert capsys.readouterr().out.split() == ["doctor", "demo-model", "download", "down"]
