"""storage.cache_artifact rendered: startcache.pyz in the image, compose's one-shot import before the server, the
Kubernetes init container; and the rendered command run for real, the way the container runs it (an interpreter
that has torch and no tqdeploy on its path), against an artifact the real `cache export` wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.vllm_server import VLLM_PYTHON, tiny_model_dir
from tqdeploy.deployspec import load_spec
from tqdeploy.errors import TQError
from tqdeploy.render import render_files

DEMO = Path(__file__).resolve().parents[1] / "tool" / "tqdeploy" / "deployspec" / "defaults" / "tiny-cpu-demo.toml"
TQDEPLOY = Path(sys.executable).parent / "tqdeploy"


def spec_text(artifact: str = "./caches/startcache.tar.xz") -> str:
    text = DEMO.read_text()
    assert "\n[storage]\n" in text
    return text.replace("\n[storage]\n", f'\n[storage]\ncache_artifact = "{artifact}"\n')


def write_spec(tmp_path: Path, artifact: str = "./caches/startcache.tar.xz") -> Path:
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_text(artifact))
    return spec


def test_an_artifact_renders_the_import_before_the_server(tmp_path):
    files = render_files(load_spec(write_spec(tmp_path)))
    name = load_spec(write_spec(tmp_path)).name
    assert "startcache.pyz" in json.loads(files["tqdeploy.lock.json"].data)["files"]
    assert b" startcache.pyz " in files["Dockerfile"].data
    compose = yaml.safe_load(files["compose.yaml"].data)["services"]
    importer = compose[f"{name}-cache-import"]
    assert compose[name]["depends_on"] == {f"{name}-cache-import": {"condition": "service_completed_successfully"}}
    assert importer["entrypoint"][:4] == [
        "python3",
        "/opt/tqdeploy/startcache.pyz",
        "import",
        "/artifact/startcache.tar.xz",
    ]
    assert "./caches:/artifact:ro" in importer["volumes"] and importer["restart"] == "no"
    pod = yaml.safe_load(files["k8s/deployment.yaml"].data)["spec"]["template"]["spec"]
    init = pod["initContainers"][0]
    assert init["command"] == importer["entrypoint"][:-1] + ["/etc/tqdeploy/secrets/vllm-api-key"]
    claim = next(v for v in pod["volumes"] if v["name"] == "startcache")["persistentVolumeClaim"]
    assert claim == {"claimName": f"{name}-startcache", "readOnly": True}
    job = yaml.safe_load(files["k8s/warmup-job.yaml"].data)["spec"]["template"]["spec"]
    assert "initContainers" not in job  # the warm-up fills the volume itself


def test_no_artifact_renders_none_of_it():
    files = render_files(load_spec(embedded="tiny-cpu-demo"))
    assert "startcache.pyz" not in files and b"cache-import" not in files["compose.yaml"].data
    assert b"initContainers" not in files["k8s/deployment.yaml"].data


def test_the_pyz_is_the_same_bytes_each_build(tmp_path):
    spec = load_spec(write_spec(tmp_path))
    assert render_files(spec)["startcache.pyz"].data == render_files(spec)["startcache.pyz"].data


@pytest.mark.parametrize("bad", ["./caches/x.tar.gz", "./ca$hes/x.tar.xz", "./my caches/x.tar.xz"])
def test_a_bad_artifact_path_is_refused(tmp_path, bad):
    with pytest.raises(TQError, match="cache_artifact"):
        load_spec(write_spec(tmp_path, bad))


def _rendered_argv(build: Path, compose_name: str, swap: dict[str, str]) -> list[str]:
    argv = yaml.safe_load((build / "compose.yaml").read_text())["services"][compose_name]["entrypoint"]
    out = []
    for arg in argv:
        for old, new in swap.items():
            arg = arg.replace(old, new) if arg.startswith(old) else arg
        out.append(arg)
    return out


def test_the_rendered_import_runs_where_only_torch_is(tmp_path):
    """The compose service's own command, its container paths mapped onto tmp_path, run with the vLLM venv's
    python in isolated mode (no tqdeploy importable but the pyz): it imports a real export, and a build whose
    fingerprint differs is refused with TQ442 and exit 0 (the server then starts cold)."""
    build = tmp_path / "build"
    subprocess.run([str(TQDEPLOY), "build", str(write_spec(tmp_path)), "--out", str(build)], check=True,
                   capture_output=True)  # fmt: skip
    spec = load_spec(build / "tqdeploy.toml")
    shutil.copytree(tiny_model_dir(), build / str(spec.model.path), ignore=shutil.ignore_patterns(".*"))
    filled = build / ".tqdeploy" / "cache" / "vllm" / "torchinductor" / "fxgraph"
    filled.mkdir(parents=True)
    (filled / "entry").write_bytes(b"compiled graph\n")
    (build / "caches").mkdir()
    env = dict(os.environ, TQDEPLOY_VLLM_PYTHON=str(VLLM_PYTHON))
    out = build / "caches" / "startcache.tar.xz"
    proc = subprocess.run([str(TQDEPLOY), "cache", "export", str(build), "-o", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    volume = tmp_path / "container-cache" / "vllm"
    key = build / "secrets" / "vllm-api-key"
    swap = {"/opt/tqdeploy/": f"{build}/", "/artifact/": f"{build}/caches/", "/cache/vllm": str(volume),
            "/models/": f"{build}/models/", "/run/secrets/vllm-api-key": str(key)}  # fmt: skip
    argv = _rendered_argv(build, f"{spec.name}-cache-import", swap)
    run = subprocess.run([str(VLLM_PYTHON), "-I", *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "TQ442 ok: imported 1 cache files" in run.stdout, run.stdout + run.stderr
    assert (volume / "torchinductor" / "fxgraph" / "entry").read_bytes() == b"compiled graph\n"

    other = tmp_path / "other" / "vllm"
    argv[argv.index("--fingerprint") + 1] = "0" * 64
    argv[argv.index("--volume") + 1] = str(other)
    run = subprocess.run([str(VLLM_PYTHON), "-I", *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "TQ442 warn" in run.stdout and "fingerprint: artifact" in run.stdout, run.stdout
    assert not other.exists() or not any(other.rglob("*"))
