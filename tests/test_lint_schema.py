"""The vLLM argument schema: committed files load, round-trip, and match vLLM's own parser."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tqdeploy.errors import TQError
from tqdeploy.vllmfacts.schema import available_versions, load_schema

REPO = Path(__file__).resolve().parent.parent
SCHEMA_DIR = REPO / "checks" / "vllm-schema"
VLLM_PY = REPO / ".venv-vllm" / "bin" / "python"


def test_committed_versions_are_listed():
    assert "0.32.0" in available_versions()
    assert "0.25.0" in available_versions()


@pytest.mark.parametrize("version", ["0.32.0", "0.25.0"])
def test_schema_file_round_trips(version):
    path = SCHEMA_DIR / f"{version}.json"
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    # deterministic: re-serialising with the extractor's settings reproduces the file byte for byte
    assert json.dumps(data, indent=1, sort_keys=True) + "\n" == text
    schema = load_schema(version)
    assert schema.version == version
    assert set(schema.options) == set(data["options"])
    for dest, raw in data["options"].items():
        opt = schema.options[dest]
        assert list(opt.names) == raw["names"]
        assert opt.type == raw["type"]
        assert opt.has_default == ("default" in raw)
        for name in opt.names:
            assert schema.lookup(name) is opt


def test_lookup_follows_vllm_name_rules():
    s = load_schema("0.32.0")
    assert s.lookup("--max_model_len").dest == "max_model_len"  # underscores == dashes
    assert s.lookup("--no-enable-chunked-prefill").dest == "enable_chunked_prefill"
    assert s.lookup("-tp").dest == "tensor_parallel_size"
    assert s.lookup("--no-such-flag") is None
    assert s.prefix_matches("--max-model") == ["--max-model-len"]


def test_kv_cache_dtype_choices_come_from_vllm():
    opt = load_schema("0.32.0").options["kv_cache_dtype"]
    for preset in ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc"):
        assert preset in opt.choices
    assert "turboquant_5bit" not in opt.choices
    assert opt.default == "auto"


def test_defaults_and_platform_dependent_values():
    s = load_schema("0.32.0")
    assert s.default("gpu_memory_utilization") == 0.92  # docs/facts.md: default 0.92 (was 0.9)
    assert s.default("tensor_parallel_size") == 1
    mm = s.options["mm_processor_device"]
    assert "choices" in mm.platform_dependent and not mm.has_default  # 'cuda' only on CUDA platforms
    with pytest.raises(TQError, match="no fixed parser default"):
        s.default("mm_processor_device")
    with pytest.raises(TQError, match="no option with dest"):
        s.default("no_such_dest")


def test_unknown_version_is_a_clear_error():
    with pytest.raises(TQError, match="no vLLM argument schema for version '0.1.0'") as info:
        load_schema("0.1.0")
    assert "0.32.0" in info.value.remediation


def test_versions_differ_in_data():
    old, new = load_schema("0.25.0"), load_schema("0.32.0")
    assert old.lookup("--calculate-kv-scales") is not None
    assert new.lookup("--calculate-kv-scales") is None


@pytest.mark.vllm
def test_extractor_reproduces_committed_schema(tmp_path):
    if not VLLM_PY.exists():
        pytest.skip(".venv-vllm missing (make vllm-cpu)")
    proc = subprocess.run(
        [str(VLLM_PY), str(REPO / "scripts" / "extract_vllm_schema.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    fresh = (tmp_path / "0.32.0.json").read_text(encoding="utf-8")
    assert fresh == (SCHEMA_DIR / "0.32.0.json").read_text(encoding="utf-8")


def test_load_formats_and_env_vars_come_from_vllm():
    """Read by the extractor from vLLM's model loader table and vllm/envs.py, per release."""
    new, old = load_schema("0.32.0"), load_schema("0.25.0")
    formats = new.options["load_format"].engine_values
    assert formats["match"] == "lower"
    assert {"auto", "fastsafetensors", "instanttensor", "runai_streamer", "ipc_cache"} <= set(formats["values"])
    assert "bitsandbytes" in old.options["load_format"].engine_values["values"]  # removed by 0.32.0
    assert "bitsandbytes" not in formats["values"]
    assert "VLLM_ENABLE_STARTUP_PLAN" in new.env_vars and "VLLM_CACHE_ROOT" in new.env_vars
    assert "VLLM_ENABLE_STARTUP_PLAN" not in old.env_vars and "VLLM_CACHE_ROOT" in old.env_vars


def test_load_format_is_checked_case_insensitively_like_vllm():
    from tqdeploy.lint import lint_command

    def ids(value):
        report = lint_command(["vllm", "serve", "m", "--load-format", value, "--host", "127.0.0.1"], live=False)
        return [f.id for f in report.findings]

    assert ids("FastSafeTensors") == []  # vllm/config/load.py lowercases it
    assert ids("fasttensors") == ["TQ308"]


def test_an_unknown_load_format_far_from_any_is_a_warning_a_plugin_may_register_it():
    from tqdeploy.lint import lint_command

    def severities(value):
        report = lint_command(["vllm", "serve", "m", "--load-format", value, "--host", "127.0.0.1"], live=False)
        return [(f.id, f.severity.value) for f in report.findings]

    assert severities("fasttensors") == [("TQ308", "error")]  # next to fastsafetensors: a typo
    assert severities("acme_blobstore") == [("TQ308", "warn")]  # register_model_loader can add it
