"""Shared pytest fixtures. Area-specific fixtures live in tests/support/."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# tests/support/ is imported as `support.*` by the test modules.
sys.path.insert(0, str(Path(__file__).resolve().parent))

# The real trained model served by the CPU vLLM, one per session, for every test that judges answers.
from support.real_model import real_vllm_server  # noqa: E402, F401


@pytest.fixture
def run_cli(capsys):
    """Run the real CLI entry point in-process; returns (exit_code, stdout, stderr)."""
    from tqdeploy.cli import main

    def _run(*args: str):
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return _run


@pytest.fixture
def tqdeploy_exe() -> str:
    """The installed console script, for tests that need a real subprocess."""
    exe = Path(sys.executable).parent / "tqdeploy"
    assert exe.exists(), f"{exe} missing: run `make install`"
    return str(exe)


@pytest.fixture(autouse=True)
def _no_debug(monkeypatch):
    monkeypatch.delenv("TQDEPLOY_DEBUG", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
