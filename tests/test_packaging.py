"""A wheel built from the repository works on its own: installed (not editable) into a fresh venv,
every data-reading command gives the same output as the checkout.

This is how operators install the tool (pipx, uv tool, a wheel in a container), so the wheel must carry
checks/, templates/, dockerfiles/ and the embedded specs.
"""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO

QWEN36 = str(FIXTURES / "models" / "qwen3.6-27b")
COMMANDS = [
    ["--version"],
    ["explain", "TQ101"],
    ["explain", "TQ331"],
    ["lint", "--json", "--", "vllm", "serve", "Qwen/Qwen3-8B", "--kv-cache-dtype", "turboquant_4bit_nc"],
    ["plan", "--json", "--model", QWEN36, "--gpu", "h200", "--max-model-len", "32768"],
]


def _run(exe: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "NO_COLOR": "1", "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> Path:
    """Build the wheel with the same pip a user would, install it into a fresh venv, not editable."""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(root / "dist"), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (root / "dist").glob("tqdeploy-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=120)
    pip = root / "venv" / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", str(wheel)], check=True, capture_output=True, timeout=600)
    return root


def test_wheel_carries_the_data_folders(wheel_venv):
    (wheel,) = (wheel_venv / "dist").glob("tqdeploy-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("checks", "templates", "dockerfiles"):
        on_disk = {
            f"tqdeploy/_data/{p.relative_to(REPO).as_posix()}" for p in (REPO / folder).rglob("*") if p.is_file()
        }
        assert on_disk and on_disk <= names, sorted(on_disk - names)[:5]
    assert "tqdeploy/deployspec/defaults/tiny-cpu-demo.toml" in names
    assert not any("__pycache__" in n or n.startswith("tests/") for n in names)
    # the lab is no part of the product (issue 36): the benchmarks live in bench/ beside the package
    assert "tqdeploy/cli.py" in names and (REPO / "bench" / "__main__.py").is_file()
    assert not [n for n in names if n.startswith(("tqdeploy/bench/", "bench/"))]


def test_installed_package_is_not_the_checkout(wheel_venv):
    py = wheel_venv / "venv" / "bin" / "python"
    res = subprocess.run(
        [str(py), "-c", "import tqdeploy; print(tqdeploy.__file__)"],
        capture_output=True,
        text=True,
        cwd=wheel_venv,
        check=True,
    )
    assert "site-packages" in res.stdout and str(REPO) not in res.stdout


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_wheel_commands_match_the_checkout(wheel_venv, tqdeploy_exe, args, tmp_path):
    installed = _run(wheel_venv / "venv" / "bin" / "tqdeploy", args, tmp_path)
    checkout = _run(Path(tqdeploy_exe), args, tmp_path)
    assert installed.returncode == checkout.returncode, installed.stderr
    assert "Traceback" not in installed.stderr
    assert installed.stdout == checkout.stdout
    assert installed.stdout.strip()


def test_wheel_build_renders_the_same_bytes(wheel_venv, tqdeploy_exe, tmp_path):
    outs = {}
    for name, exe in (("wheel", wheel_venv / "venv" / "bin" / "tqdeploy"), ("checkout", Path(tqdeploy_exe))):
        res = _run(exe, ["build", "--embedded", "tiny-cpu-demo", "--out", str(tmp_path / name)], tmp_path)
        assert res.returncode == 0, res.stderr
        outs[name] = tmp_path / name
    # The API key file build creates holds a random key per build: not a rendered file, so not compared.
    key = Path("secrets") / "vllm-api-key"
    assert (outs["wheel"] / key).is_file() and (outs["checkout"] / key).is_file()
    files = sorted(p.relative_to(outs["checkout"]) for p in outs["checkout"].rglob("*") if p.is_file())
    files.remove(key)
    assert len(files) >= 8
    match, mismatch, errors = filecmp.cmpfiles(outs["wheel"], outs["checkout"], [str(f) for f in files], shallow=False)
    assert not mismatch and not errors, (mismatch, errors)
    assert os.access(outs["wheel"] / "serve.sh", os.X_OK)
