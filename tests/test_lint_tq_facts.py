"""Measured TurboQuant facts as rules (issue 34, item 4): TQ348 (CPU build), TQ349 (prefix caching) and TQ321 per
release, each with its release range from checks/turboquant.json; `tqdeploy build` refuses a CPU spec with a
TurboQuant dtype in one line naming the key and the fix."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tqdeploy.findings import Severity
from tqdeploy.lint import lint_command
from tqdeploy.model.tqdata import in_release_range, known_bad

SAFE = "--host 127.0.0.1"
CPU_IMAGE = "vllm/vllm-openai-cpu:v0.32.0-x86_64"


def found(cmd: str, **kw) -> dict[str, object]:
    return {f.id: f for f in lint_command(shlex.split(cmd), live=False, **kw).findings}


@pytest.mark.parametrize(
    "cmd",
    [
        f"docker run --shm-size 4g -p 127.0.0.1:8000:8000 {CPU_IMAGE} m --kv-cache-dtype turboquant_4bit_nc {SAFE}",
        "docker run --shm-size 4g -p 127.0.0.1:8000:8000 public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.25.0 m "
        f"--kv-cache-dtype turboquant_k8v4 {SAFE}",
        f"VLLM_CPU_KVCACHE_SPACE=8 python -m vllm.entrypoints.openai.api_server --model m "
        f"--kv-cache-dtype turboquant_k8v4 {SAFE}",
        f"env VLLM_CPU_OMP_THREADS_BIND=0-3 vllm serve m --kv-cache-dtype turboquant_3bit_nc {SAFE}",
    ],
)
def test_tq348_catches_turboquant_on_the_cpu_build(cmd):
    f = found(cmd)["TQ348"]
    assert f.severity == Severity.ERROR and f.location == "--kv-cache-dtype"
    assert "14,069" in f.title and "auto or fp8" in f.remediation


@pytest.mark.parametrize(
    "cmd",
    [
        f"docker run --shm-size 4g -p 127.0.0.1:8000:8000 {CPU_IMAGE} m --kv-cache-dtype fp8 {SAFE}",
        f"docker run --gpus all --ipc=host -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.32.0 m "
        f"--kv-cache-dtype turboquant_4bit_nc {SAFE}",
        # nothing says which build runs it: either build runs this module
        f"python -m vllm.entrypoints.openai.api_server --model m --kv-cache-dtype turboquant_4bit_nc {SAFE}",
        # a misspelt preset is TQ302's alone
        f"VLLM_CPU_KVCACHE_SPACE=8 vllm serve m --kv-cache-dtype turboquant_5bit {SAFE}",
    ],
)
def test_tq348_passes_what_is_not_turboquant_on_the_cpu_build(cmd):
    assert "TQ348" not in found(cmd)


def test_tq348_fix_drops_the_dtype_and_the_build_variant_is_a_marker():
    report = lint_command(shlex.split(f"vllm serve m --kv-cache-dtype turboquant_k8v4 {SAFE}"), live=False)
    assert "TQ348" not in {f.id for f in report.findings}  # the argv alone: a GPU build as far as lint knows
    cpu = lint_command(shlex.split(f"vllm serve m --kv-cache-dtype turboquant_k8v4 {SAFE}"), live=False, variant="cpu")
    [f] = [f for f in cpu.findings if f.id == "TQ348"]
    assert 'variant = "cpu"' in f.title
    assert "--kv-cache-dtype" not in cpu.fixed_argv and "turboquant_k8v4" not in cpu.fixed_argv


@pytest.mark.parametrize("version", ["0.25.0", "0.32.0"])
def test_tq349_warns_while_prefix_caching_is_on_and_not_when_it_is_off(version):
    default_on = found(f"vllm serve m --kv-cache-dtype turboquant_4bit_nc {SAFE}", vllm_version=version)["TQ349"]
    assert default_on.severity == Severity.WARN and "on by default" in default_on.title
    assert "--no-enable-prefix-caching" in default_on.remediation and "3 of 16" in default_on.title
    explicit = found(f"vllm serve m --kv-cache-dtype turboquant_k8v4 --enable-prefix-caching {SAFE}")["TQ349"]
    assert explicit.location == "--enable-prefix-caching"
    off = f"vllm serve m --kv-cache-dtype turboquant_4bit_nc --no-enable-prefix-caching {SAFE}"
    assert "TQ349" not in found(off, vllm_version=version)
    # the last occurrence wins, as in vLLM's parser
    assert "TQ349" in found(
        f"vllm serve m --kv-cache-dtype turboquant_4bit_nc --no-enable-prefix-caching --enable-prefix-caching {SAFE}"
    )
    assert "TQ349" not in found(f"vllm serve m --kv-cache-dtype fp8 {SAFE}", vllm_version=version)


def test_tq321_says_what_each_release_does():
    cmd = (
        "vllm serve m --kv-cache-dtype turboquant_k8v4 --speculative-config "
        f'\'{{"method": "ngram", "num_speculative_tokens": 3}}\' {SAFE}'
    )
    old = found(cmd, vllm_version="0.25.0")["TQ321"]
    assert "does not start on vLLM 0.25.0" in old.title and "Unknown TurboQuant cache dtype: 'auto'" in old.title
    new = found(cmd, vllm_version="0.32.0")["TQ321"]
    assert "silently degenerate output on vLLM 0.32.0" in new.title
    assert old.severity == new.severity == Severity.ERROR


def test_release_ranges_come_from_the_data_file():
    """Each entry applies from the first release it was seen in until a verified fix: an unverified fix is none."""
    prefix = known_bad("TQ349")
    assert prefix["from_version"] == "0.25.0" and prefix["verified_fixed_in"] is None
    assert in_release_range(prefix, "0.25.0") and in_release_range(prefix, "0.32.0")
    assert not in_release_range(prefix, "0.24.0")
    assert not in_release_range({**prefix, "verified_fixed_in": "0.30.0"}, "0.32.0")
    assert in_release_range({**prefix, "verified_fixed_in": "0.30.0"}, "0.29.1")
    for rule in ("TQ321", "TQ348", "TQ349"):
        entry = known_bad(rule)
        assert entry["applies_to"] and entry["symptom"] and entry["from_version"]


CPU_TQ_SPEC = """schema = 1
name = "cpu-tq"
variant = "cpu"

[model]
path = "./models/tiny"
served_name = "tiny"

[vllm]
version = "0.32.0"
dtype = "bfloat16"
max_model_len = 512
kv_cache_dtype = "{dtype}"
gpu_memory_utilization = 0.3

[image]
base = "python:3.11-slim-bookworm"

[server]
host = "127.0.0.1"
port = 8000

[resources]
gpus = []
shm_size = "2g"
"""


def test_build_refuses_a_cpu_spec_with_a_turboquant_dtype_in_one_line(run_cli, tmp_path: Path):
    spec = tmp_path / "tqdeploy.toml"
    spec.write_text(CPU_TQ_SPEC.format(dtype="turboquant_k8v4"))
    out = tmp_path / "out"
    code, stdout, err = run_cli("build", str(spec), "--out", str(out))
    assert code == 2 and not out.exists(), stdout + err
    assert "Traceback" not in err
    line = next(x for x in err.splitlines() if "TQ348" in x)
    assert "vllm.kv_cache_dtype" in line and "turboquant_k8v4" in line, err
    assert 'kv_cache_dtype = "auto" or "fp8"' in err
    spec.write_text(CPU_TQ_SPEC.format(dtype="fp8"))
    code, stdout, err = run_cli("build", str(spec), "--out", str(out))
    assert code == 0 and "TQ348" not in stdout + err, stdout + err


def test_a_failed_start_with_0_25_s_auto_dtype_error_names_both_measured_causes():
    """The line vLLM 0.25.0 printed on the H200 (the hybrid crash, the same message the drafter gives)."""
    from tqdeploy.runtime.classify import StartContext, classify_exit

    log = Path(__file__).parent / "fixtures" / "vllm-logs" / "h200-vllm-0.25.0" / "q36like-tq-hybrid-crash.log"
    finding = classify_exit(log.read_text().splitlines(), 1, StartContext(build_dir="b"))
    assert finding.id == "TQ406" and "Unknown TurboQuant cache dtype: 'auto'" in finding.evidence["line"]
    assert "TQ321" in finding.remediation and "#50709" in finding.remediation


def test_lint_of_a_cpu_build_s_edited_serve_sh_knows_the_variant_from_its_lock(run_cli, tmp_path: Path):
    import json

    out = tmp_path / "b"
    assert run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out))[0] == 0
    serve = out / "serve.sh"
    text = serve.read_text()
    assert "  --dtype bfloat16 \\\n" in text
    edited = tmp_path / "b" / "serve-edited.sh"  # beside the lock, as a hand edit of the build would be
    edited.write_text(
        text.replace("  --dtype bfloat16 \\\n", "  --dtype bfloat16 --kv-cache-dtype turboquant_k8v4 \\\n")
    )
    code, stdout, _ = run_cli("lint", "--json", "--no-live", "--file", str(edited))
    assert code == 1 and "TQ348" in {f["id"] for f in json.loads(stdout)["findings"]}
    loose = tmp_path / "serve.sh"  # the same script outside a build: nothing says it is the CPU build
    loose.write_text(edited.read_text())
    code, stdout, _ = run_cli("lint", "--json", "--no-live", "--file", str(loose))
    assert "TQ348" not in {f["id"] for f in json.loads(stdout)["findings"]}
