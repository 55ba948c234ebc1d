"""docs/architecture.md's `command` recipe, followed on a copy of the package: the new command is listed by
`tqdeploy --help` without being imported, has its own `-h`, and runs with --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.recipes import apply_recipe


def _tqdeploy(tool: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tool), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "tqdeploy", *argv], capture_output=True, text=True, env=env, timeout=60, cwd=tool
    )


def test_the_command_recipe_adds_a_working_command(tmp_path):
    tool = apply_recipe("command", tmp_path)

    listing = _tqdeploy(tool, "--help")
    assert listing.returncode == 0, listing.stderr
    assert "pins        Print the vLLM release tqdeploy checks against by default" in listing.stdout

    own_help = _tqdeploy(tool, "pins", "-h")
    assert own_help.returncode == 0, own_help.stderr
    assert own_help.stdout.startswith("Usage: tqdeploy pins [OPTIONS]") and "--json" in own_help.stdout
    assert "Exit codes:" in own_help.stdout

    run = _tqdeploy(tool, "pins", "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    from tqdeploy import __version__
    from tqdeploy.pins import DEFAULT_VLLM_VERSION

    assert data == {"schema": "tqdeploy.pins/1", "tqdeploy": __version__, "vllm": DEFAULT_VLLM_VERSION}
    assert _tqdeploy(tool, "pins").stdout.startswith(f"tqdeploy {__version__} checks against vLLM")


def test_the_recipes_command_follows_the_tables_rules(tmp_path):
    """The copy's table and the copy's modules agree (the rules tests/test_cli_table.py holds for the real one)."""
    tool = apply_recipe("command", tmp_path)
    code = (
        "import pkgutil, tqdeploy.commands as c\n"
        "from tqdeploy.cli import COMMANDS, load_command\n"
        "from tqdeploy.clihelp import first_sentence\n"
        "present = {m.name for m in pkgutil.iter_modules(c.__path__)} - {'options'}\n"
        "assert sorted(line.module for line in COMMANDS.values()) == sorted(present)\n"
        "command = load_command('pins')\n"
        "assert COMMANDS['pins'].summary == first_sentence(command.help), command.help\n"
        "print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tool)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.stdout.strip() == "ok", proc.stderr
