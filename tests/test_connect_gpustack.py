"""build's gpustack-backend.yaml, validated against GPUStack's own rules (read from the gpustack 2.3.0 wheel)."""

from __future__ import annotations

import re

import pytest
import yaml

from support.gpustack_schema import WHEEL, GpustackRules


@pytest.fixture(scope="module")
def rules():
    if not WHEEL.is_file():
        pytest.fail(f"{WHEEL} is missing: make test-deps downloads it (pip download --no-deps gpustack==2.3.0)")
    return GpustackRules()


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    from tqdeploy.cli import main

    out = tmp_path_factory.mktemp("qwen-build")
    assert main(["build", "--embedded", "qwen36-27b-tq", "--out", str(out)]) == 0
    return yaml.safe_load((out / "gpustack-backend.yaml").read_text())


def test_the_rendered_backend_passes_gpustacks_validation(rules, rendered):
    rules.validate(rendered)
    assert rendered["backend_name"] == "tqdeploy-qwen36-27b-tq-custom"
    (version,) = rendered["version_configs"]
    assert version == rendered["default_version"] == "v0.32.0-custom"
    config = rendered["version_configs"][version]
    assert config["image_name"] == "vllm/vllm-openai:v0.32.0"
    assert set(re.findall(r"\{\{(\w+)\}\}", config["run_command"])) <= rules.placeholders
    assert "--kv-cache-dtype=turboquant_4bit_nc" in rendered["default_backend_param"]
    assert not any(p.startswith("--served-model-name") for p in rendered["default_backend_param"])


@pytest.mark.parametrize(
    "change, refused",
    [
        ({"backend_name": "tqdeploy-qwen"}, "must end with '-custom'"),
        ({"version_configs": {"v0.32.0": {"image_name": "vllm/vllm-openai:v0.32.0"}}}, "must end with '-custom'"),
        ({"backend_configs": {}}, "drops ['backend_configs']"),  # the invented backend_configs.yaml shape
        ({"default_backend_param": "--kv-cache-dtype=fp8"}, "valid list"),
        ({"version_configs": {"v1-custom": {"image": "x"}}}, "VersionConfig has no ['image']"),
    ],
)
def test_gpustacks_rules_refuse_what_gpustack_refuses(rules, rendered, change, refused):
    with pytest.raises(Exception, match=re.escape(refused)):
        rules.validate({**rendered, **change})


def test_cpu_and_multi_node_specs_do_not_render_it(run_cli, tmp_path):
    code, out, _ = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(tmp_path))
    assert code == 0 and not (tmp_path / "gpustack-backend.yaml").exists()
    assert "not rendered: gpustack-backend.yaml: GPUStack runs the official vLLM CUDA image" in out
