"""The `rule` recipe of docs/architecture.md, followed on a copy of the package: the new rule reports on a command
that trips it, stays quiet on one that does not, and its page's own examples hold (as tests/test_lint_docs.py
runs them for the rules that ship)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from support.recipes import apply_recipe

TRIPS = ["vllm", "serve", "Qwen/Qwen3-8B", "--max-num-seqs", "512", "--max-num-batched-tokens", "256"]
PASSES = ["vllm", "serve", "Qwen/Qwen3-8B", "--max-num-seqs", "256", "--max-num-batched-tokens", "8192"]


def _tqdeploy(tool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tool)}
    return subprocess.run([sys.executable, "-m", "tqdeploy", *args], capture_output=True, text=True, env=env)


def _lint_ids(tool: Path, argv: list[str]) -> tuple[int, set[str]]:
    proc = _tqdeploy(tool, "lint", "--json", "--no-live", "--", *argv)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, {f["id"] for f in json.loads(proc.stdout)["findings"]}


def test_the_rule_recipe_adds_a_rule_that_lint_runs(tmp_path):
    tool = apply_recipe("rule", tmp_path)
    assert _tqdeploy(tool, "--version").returncode == 0
    code, ids = _lint_ids(tool, TRIPS)
    assert "TQ316" in ids and code == 1  # an error: lint exits 1
    proc = _tqdeploy(tool, "lint", "--no-live", "--", *TRIPS)
    assert "--max-num-batched-tokens 256 is below --max-num-seqs 512" in proc.stdout
    _, ids = _lint_ids(tool, PASSES)
    assert "TQ316" not in ids

    page = _tqdeploy(tool, "explain", "TQ316")
    assert page.returncode == 0 and page.stdout.startswith("# TQ316:"), page.stderr
    sections = dict(re.findall(r"^## (\w+)\n(.*?)(?=^## |\Z)", page.stdout, re.S | re.M))
    for section, wanted in (("Catches", True), ("Passes", False)):
        examples = re.findall(r"^`(.+)`$", sections[section], re.M)
        assert examples, section
        for example in examples:
            assert ("TQ316" in _lint_ids(tool, example.split())[1]) is wanted, (section, example)


def test_the_shipped_package_has_no_rule_the_recipe_adds():
    """The recipe writes new files (file=): the id and the module stay free in the package itself."""
    repo = Path(__file__).resolve().parent.parent
    assert not (repo / "checks" / "docs" / "TQ316.md").exists()
    assert not (repo / "tool" / "tqdeploy" / "lint" / "rules" / "scheduler.py").exists()
