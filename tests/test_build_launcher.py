"""The rendered launch_vllm.py refuses a bad key file (exit 67, one line naming the file) before it imports vLLM,
and never echoes the key: run for real with this interpreter, which has no vLLM (a good key would go on to the
import and fail there, which the CPU vLLM test in test_build_vllm.py covers end to end)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tqdeploy.deployspec import load_spec
from tqdeploy.render import render_files, write_build

SECRET = "tq-launcher-secret-9f3a"


@pytest.fixture(scope="module")
def launcher(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("launch")
    write_build(out, render_files(load_spec()))  # the keyed default spec
    return out / "launch_vllm.py"


def _run(launcher: Path, key_file: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("VLLM_API_KEY", "VLLM_RUST_FRONTEND_PATH")}
    return subprocess.run(
        [sys.executable, str(launcher), "/models/m", "--port", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, "TQ_API_KEY_FILE": key_file, **env},
    )


def _cases(tmp: Path) -> dict[str, tuple[str, str]]:
    big = tmp / "big"
    big.write_text("k" * 5000)
    two = tmp / "two"
    two.write_text(SECRET + "\nsecond line\n")
    empty = tmp / "empty"
    empty.write_text("\n")
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    return {
        "missing": (str(tmp / "none"), "No such file"),
        "folder": (str(tmp), "not a regular file"),
        "fifo": (str(fifo), "not a regular file"),
        "too large": (str(big), "larger than 4096 bytes"),
        "two lines": (str(two), "or more than one line"),
        "empty": (str(empty), "empty"),
    }


def test_bad_key_files_are_refused_before_vllm_is_imported(launcher, tmp_path):
    for name, (path, message) in _cases(tmp_path).items():
        res = _run(launcher, path)
        assert res.returncode == 67, (name, res.stderr)
        assert res.stderr.startswith("launch_vllm.py: exit 67 (key-file): API key file") and message in res.stderr, (
            name,
            res.stderr,
        )
        assert SECRET not in res.stderr + res.stdout
        assert "Traceback" not in res.stderr


def test_a_rust_frontend_would_get_the_key_in_argv_and_is_refused(launcher, tmp_path):
    key = tmp_path / "key"
    key.write_text(SECRET + "\n")
    res = _run(launcher, str(key), VLLM_RUST_FRONTEND_PATH="/usr/bin/true")
    assert (
        res.returncode == 68 and "VLLM_RUST_FRONTEND_PATH" in res.stderr and SECRET not in res.stderr
    )  # its own reason


def test_a_good_key_reaches_the_vllm_import(launcher, tmp_path):
    key = tmp_path / "key"
    key.write_text(SECRET + "\n")
    res = _run(launcher, str(key))
    assert res.returncode != 67 and "ModuleNotFoundError: No module named 'vllm'" in res.stderr
    assert SECRET not in res.stderr + res.stdout


def test_the_key_prints_as_redacted_and_hashes_as_itself(launcher):
    import hashlib
    import importlib.util

    spec = importlib.util.spec_from_file_location("launch_vllm", launcher)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the main() guard: importing starts nothing
    key = module._Key(SECRET)
    assert repr([key]) == "['[redacted]']" and str(key) == "[redacted]" and f"{[key]}" == "['[redacted]']"
    assert hashlib.sha256(key.encode("utf-8")).digest() == hashlib.sha256(SECRET.encode()).digest()
    assert key == SECRET
