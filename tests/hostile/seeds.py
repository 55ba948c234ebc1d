"""Inputs a careless or hostile user gives, and the checks every outcome must pass.

A case writes its input under a temporary folder and returns the argv (and environment) to run; the
outcome is an exit code and a needle in the first line of stderr. Every case is also checked for what
must never happen: a traceback or internal error, a seeded secret in any stream or file, a staging or
temp file left behind, a run longer than its time bound.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

SECRET = "sk-tqhostile-9f8e7d6c5b4a39281706"  # seeded into inputs; must appear in no output or file
HF_SECRET = "hf_TqHostileSeededToken0123456789abcd"
PASSWORD = "pw-tqhostile-53cr3t"
SECRETS = (SECRET, HF_SECRET, PASSWORD)

TESTS = Path(__file__).resolve().parent.parent
QWEN3_CONFIG = TESTS / "fixtures" / "models" / "qwen3-8b" / "config.json"


def embedded_text(name: str = "tiny-cpu-demo") -> str:
    from tqdeploy.deployspec.load import embedded_spec_path

    return embedded_spec_path(name).read_text()


def spec_with(tmp: Path, old: str, new: str, name: str = "tiny-cpu-demo") -> Path:
    text = embedded_text(name)
    assert old in text, old
    path = tmp / "spec.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def safetensors_bytes(header: dict | str, data: bytes = b"") -> bytes:
    raw = header if isinstance(header, str) else json.dumps(header)
    blob = raw.encode()
    blob += b" " * (-len(blob) % 8)
    return struct.pack("<Q", len(blob)) + blob + data


def model_dir(tmp: Path, config: dict | str | None = None, **files: bytes) -> Path:
    """A checkpoint folder: config.json (the Qwen3-8B fixture, or config given) and extra files."""
    folder = tmp / "model"
    folder.mkdir(exist_ok=True)
    if config is None:
        text = QWEN3_CONFIG.read_text()
    elif isinstance(config, str):
        text = config
    else:
        text = json.dumps(config)
    (folder / "config.json").write_text(text)
    for name, data in files.items():
        (folder / name.replace("__", "/")).parent.mkdir(parents=True, exist_ok=True)
        (folder / name.replace("__", "/")).write_bytes(data)
    return folder


def qwen3_config(**changes) -> dict:
    config = json.loads(QWEN3_CONFIG.read_text())
    config.update(changes)
    return config


def leftovers(root: Path) -> list[str]:
    """Half-written files: staging folders, *.tmp and *.incomplete files."""
    bad = []
    for path in root.rglob("*"):
        name = path.name
        if name.startswith(".tqdeploy-staging-") or name.endswith(".tmp") or name.endswith(".incomplete"):
            bad.append(str(path.relative_to(root)))
    return bad


def secrets_in_files(root: Path, allowed: set[Path]) -> list[str]:
    """Files under root (other than the inputs that carry the seed) holding a seeded secret."""
    found = []
    for path in root.rglob("*"):
        if path in allowed or not path.is_file() or path.is_symlink():
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if any(s.encode() in data for s in SECRETS):
            found.append(str(path.relative_to(root)))
    return found
