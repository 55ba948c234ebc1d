"""Benchmark: `tqdeploy cache export` and `cache import` of the tiny CPU demo's start-up caches (issue 38, item 4),
against `tar -cJf` / `tar -xJf` of the same volume (what an operator would reach for, without the manifest, the
secret scan or the checks), and what the import buys: the first start of a fresh build in another folder on the
imported caches against the cold start that filled them.

One run: the embedded demo spec built twice with the tiny generated model (tests/support/make_tiny_model.py, as
`make run` does) at its model path, the first started once through `up --no-check` on its own cache volume (cold:
the tiny model's answers are noise, so the answer check is not what is timed), exported, the second build names the
artifact in storage.cache_artifact and its `up` imports it and starts. Sizes are the
artifact's and the volume's; times are wall clock of the CLI (export and import each ask the build's interpreter
for torch's facts: most of their time on this machine). TQDEPLOY_VLLM_PYTHON names the vLLM interpreter.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import Row
from bench.doctor import VLLM_PYTHON, tqdeploy_argv
from bench.up import DEMO_SPEC, MAKE_MODEL, free_port

MODEL_PATH = "./models/tiny"


def make_build(root: Path, python: str, artifact: Path | None = None) -> Path:
    text = DEMO_SPEC.read_text().replace("port = 8000", f"port = {free_port()}")
    text = re.sub(r'(?m)^path = ".*"$', f'path = "{MODEL_PATH}"', text, count=1)
    if artifact is not None:
        text = text.replace("\n[storage]\n", f'\n[storage]\ncache_artifact = "{artifact}"\n')
    (root / "tqdeploy.toml").write_text(text)
    build = root / "build"
    subprocess.run(tqdeploy_argv() + ["build", str(root / "tqdeploy.toml"), "--out", str(build)], check=True,
                   capture_output=True)  # fmt: skip
    subprocess.run([python, str(MAKE_MODEL), str(build / MODEL_PATH)], check=True, capture_output=True)
    return build


def up_down(build: Path, python: str, env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """`up --no-check` to ready (seconds, its JSON), then `down`."""
    try:
        return _timed(tqdeploy_argv() + ["up", str(build), "--python", python, "--no-check", "--json"], env)
    finally:
        subprocess.run(tqdeploy_argv() + ["down", str(build)], env=env, capture_output=True, timeout=300)


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    t0 = time.monotonic()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    took = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[1:3])} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return took, (json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {})


def run() -> list[Row]:
    python = os.environ.get("TQDEPLOY_VLLM_PYTHON", str(VLLM_PYTHON))
    with tempfile.TemporaryDirectory(prefix="tq-bench-startcache-") as tmp:
        root = Path(tmp)
        (root / "a").mkdir()
        (root / "b").mkdir()
        artifact = root / "caches.tar.xz"
        first = make_build(root / "a", python)
        second = make_build(root / "b", python, artifact)
        env = dict(os.environ) | {"TQDEPLOY_VLLM_PYTHON": python}
        env.pop("VLLM_CACHE_ROOT", None)  # each build on its own volume (BUILD/.tqdeploy/cache/vllm)
        cold, _ = up_down(first, python, env)
        volume = first / ".tqdeploy" / "cache" / "vllm"
        export_s, exported = _timed(
            tqdeploy_argv() + ["cache", "export", str(first), "-o", str(artifact), "--json"], env
        )
        tar_t0 = time.monotonic()
        subprocess.run(["tar", "-cJf", str(root / "plain.tar.xz"), "-C", str(volume), "."], check=True, timeout=600)
        tar_s = time.monotonic() - tar_t0
        (root / "c").mkdir()
        third = make_build(root / "c", python)  # the command's own figure; the second build's up imports it again
        import_s, imported = _timed(tqdeploy_argv() + ["cache", "import", str(third), str(artifact), "--json"], env)
        (root / "untar").mkdir()
        untar_t0 = time.monotonic()
        subprocess.run(["tar", "-xJf", str(root / "plain.tar.xz"), "-C", str(root / "untar")], check=True, timeout=600)
        untar_s = time.monotonic() - untar_t0
        warm, up = up_down(second, python, env)
        if not any(f["id"] == "TQ442" and f["severity"] == "ok" for f in up.get("findings", [])):
            raise RuntimeError("the second build's up did not import the artifact (no TQ442 ok)")
        plain_mb = (root / "plain.tar.xz").stat().st_size / 1e6
    files = exported.get("files", 0)
    return [
        Row(f"cache export wall ({files} files)", export_s, tar_s, "s", "", "tar -cJf"),
        Row("cache import wall (checked, atomic)", import_s, untar_s, "s", "", "tar -xJf"),
        Row("cache artifact size", exported.get("packed_bytes", 0) / 1e6, plain_mb, "MB", "", "tar -cJf"),
        Row("cache volume unpacked", imported.get("unpacked_bytes", 0) / 1e6, None, "MB"),
        Row("first up after import vs cold up", warm, cold, "s", "< cold", "cold up of the build that exported"),
    ]
