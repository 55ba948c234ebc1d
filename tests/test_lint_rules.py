"""Each lint rule catches its bad case and passes the good one (real blog-style command lines)."""

from __future__ import annotations

import shlex

import pytest

from tqdeploy.findings import Severity
from tqdeploy.lint import lint_command

SAFE = "--host 127.0.0.1"


def lint(cmd: str, **kw):
    return lint_command(shlex.split(cmd), live=False, **kw)


def ids(report) -> list[str]:
    return [f.id for f in report.findings]


CASES = [
    # (rule, bad command, good command)
    (
        "TQ301",
        f"vllm serve Qwen/Qwen3.6-27B --gpu-memory-utilisation 0.9 {SAFE}",
        f"vllm serve Qwen/Qwen3.6-27B --gpu-memory-utilization 0.9 {SAFE}",
    ),
    (
        "TQ302",
        f"vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_5bit {SAFE}",
        f"vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_3bit_nc --no-enable-prefix-caching {SAFE}",
    ),
    (
        "TQ303",
        f"vllm serve Qwen/Qwen3.6-27B --max-num-seqs many {SAFE}",
        f"vllm serve Qwen/Qwen3.6-27B --max-num-seqs 256 {SAFE}",
    ),
    (
        "TQ303",
        f"vllm serve Qwen/Qwen3.6-27B --max-model-len 32x {SAFE}",
        f"vllm serve Qwen/Qwen3.6-27B --max-model-len 32k {SAFE}",
    ),
    (
        "TQ303",
        f"vllm serve Qwen/Qwen3.6-27B --speculative-config {{method:mtp}} {SAFE}",
        f'vllm serve Qwen/Qwen3.6-27B --speculative-config \'{{"method": "mtp"}}\' {SAFE}',
    ),
    (
        "TQ304",
        f"vllm serve Qwen/Qwen3-8B --calculate-kv-scales {SAFE}",
        f"vllm serve Qwen/Qwen3-8B --kv-cache-dtype fp8 {SAFE}",
    ),
    (
        "TQ305",
        f"vllm serve Qwen/Qwen3-8B --enable-prefix-caching=true {SAFE}",
        f"vllm serve Qwen/Qwen3-8B --enable-prefix-caching {SAFE}",
    ),
    ("TQ306", f"vllm serve Qwen/Qwen3-8B --disable-cascade-attn {SAFE}", f"vllm serve Qwen/Qwen3-8B {SAFE}"),
    (
        "TQ307",
        f"vllm serve Qwen/Qwen3-8B --max-model 4096 {SAFE}",
        f"vllm serve Qwen/Qwen3-8B --max-model-len 4096 {SAFE}",
    ),
    (
        "TQ308",
        f"vllm serve Qwen/Qwen3-8B --attention-backend FLASH_ATTENTION {SAFE}",
        f"vllm serve Qwen/Qwen3-8B --attention-backend flash_attn {SAFE}",
    ),
    (
        "TQ308",
        f"vllm serve Qwen/Qwen3-8B-AWQ --quantization awq4 {SAFE}",
        f"vllm serve Qwen/Qwen3-8B-AWQ --quantization awq_marlin {SAFE}",
    ),
    (
        "TQ309",
        f"vllm serve Qwen/Qwen3-8B --port 8000 --port 8001 {SAFE}",
        f"vllm serve Qwen/Qwen3-8B --port 8001 {SAFE}",
    ),
    (
        "TQ320",
        f"vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_4bit_nc --attention-backend TRITON_ATTN {SAFE}",
        "vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_4bit_nc --attention-backend TURBOQUANT "
        f"--no-enable-prefix-caching {SAFE}",
    ),
    (
        "TQ321",
        "vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_4bit_nc "
        f'--speculative-config \'{{"method": "mtp", "num_speculative_tokens": 1}}\' {SAFE}',
        "vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype fp8 "
        f'--speculative-config \'{{"method": "mtp", "num_speculative_tokens": 1}}\' {SAFE}',
    ),
    (
        "TQ321",  # --enforce-eager was #40831's workaround; on 0.32 it does not make the combination safe
        "vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_4bit_nc "
        f'--speculative-config \'{{"method": "mtp", "num_speculative_tokens": 1}}\' --enforce-eager {SAFE}',
        "vllm serve Qwen/Qwen3.6-27B --kv-cache-dtype turboquant_4bit_nc --enforce-eager "
        f"--no-enable-prefix-caching {SAFE}",
    ),
    (
        "TQ322",
        "vllm serve Qwen/Qwen3-8B --host 0.0.0.0 --port 8000",
        'VLLM_API_KEY="$(cat /run/secrets/key)" vllm serve Qwen/Qwen3-8B --host 0.0.0.0 --port 8000',
    ),
    ("TQ322", "vllm serve Qwen/Qwen3-8B", f"vllm serve Qwen/Qwen3-8B {SAFE}"),
    (
        "TQ323",
        "vllm serve Qwen/Qwen3-8B --host 0.0.0.0 --api-key sk-live-123456",
        "vllm serve Qwen/Qwen3-8B --host 127.0.0.1",
    ),
    (
        "TQ330",
        "docker run --gpus device=0,1 --ipc=host -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.32.0 Qwen/Qwen3-8B -tp 2",
        "docker run --gpus '\"device=0,1\"' --ipc=host -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.32.0 "
        "Qwen/Qwen3-8B -tp 2",
    ),
    (
        "TQ331",
        "docker run --gpus all -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.32.0 Qwen/Qwen3-8B",
        "docker run --gpus all --shm-size 16g -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.32.0 Qwen/Qwen3-8B",
    ),
    (
        "TQ332",
        "docker run --gpus all --ipc=host -p 8000:8000 vllm/vllm-openai:v0.32.0 Qwen/Qwen3-8B",
        "docker run --gpus all --ipc=host -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.32.0 Qwen/Qwen3-8B",
    ),
    (
        "TQ333",
        "docker run --gpus all --ipc=host -e HF_TOKEN=hf_abcdefSECRET -p 127.0.0.1:8000:8000 "
        "vllm/vllm-openai:v0.32.0 Qwen/Qwen3-8B",
        "docker run --gpus all --ipc=host -e HF_TOKEN -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.32.0 Qwen/Qwen3-8B",
    ),
    (
        "TQ334",
        "docker run --gpus all --ipc=host -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.32.0 Qwen/Qwen3-8B "
        "--host 127.0.0.1",
        "docker run --gpus all --ipc=host --network host vllm/vllm-openai:v0.32.0 Qwen/Qwen3-8B --host 127.0.0.1",
    ),
    (
        "TQ311",
        "docker run --gpus all --ipc=host -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.19.1 Qwen/Qwen3-8B",
        "docker run --gpus all --ipc=host -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.25.0 Qwen/Qwen3-8B",
    ),
]


@pytest.mark.parametrize("rule,bad,good", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule_catches_bad_and_passes_good(rule, bad, good):
    assert rule in ids(lint(bad)), lint(bad).to_dict()
    assert ids(lint(good)) == [], lint(good).to_dict()


# Rules whose finding carries an edit; the others (bad types, secrets on argv, unknown image versions)
# need the operator's decision and only say what to do.
FIXABLE = {
    "TQ301",
    "TQ302",
    "TQ304",
    "TQ305",
    "TQ307",
    "TQ309",
    "TQ320",
    "TQ322",
    "TQ330",
    "TQ331",
    "TQ332",
    "TQ333",
    "TQ334",
}
FIX_CASES = [c for c in CASES if c[0] in FIXABLE]


@pytest.mark.parametrize("rule,bad,good", FIX_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(FIX_CASES)])
def test_fixed_command_no_longer_has_the_finding(rule, bad, good):
    report = lint(bad)
    assert any(f.id == rule and f.edit is not None for f in report.findings)
    assert report.changed
    again = lint_command(report.fixed_argv, live=False)
    assert rule not in ids(again), again.to_dict()


def test_did_you_mean_and_fix():
    r = lint(f"vllm serve m --tensor-paralel-size 2 {SAFE}")
    f = r.findings[0]
    assert f.id == "TQ301" and "--tensor-parallel-size" in f.title
    assert "--tensor-parallel-size" in r.fixed_argv


def test_did_you_mean_never_gives_an_option_twice():
    # --model-len is closest to --max-model-len, which the command already sets: renaming it would give
    # --max-model-len twice (the typo's value winning silently), so the fix drops the typo with its value.
    r = lint(f"vllm serve m --max-model-len 100000 --model-len 5 {SAFE}")
    f = next(f for f in r.findings if f.id == "TQ301")
    assert "already sets --max-model-len 100000" in f.remediation
    assert r.fixed_argv == ["vllm", "serve", "m", "--max-model-len", "100000", "--host", "127.0.0.1"]
    assert ids(lint_command(r.fixed_argv, live=False)) == []
    alone = lint(f"vllm serve m --model-len 5 {SAFE}")
    assert alone.fixed_argv[3:5] == ["--max-model-len", "5"]


def test_boolean_with_value_becomes_no_form():
    r = lint(f"vllm serve m --enable-prefix-caching=False {SAFE}")
    assert r.fixed_argv[-3] == "--no-enable-prefix-caching"
    r = lint(f"vllm serve m --no-enforce-eager=false {SAFE}")
    assert "--enforce-eager" in r.fixed_argv


def test_version_changes_verdict():
    cmd = f"vllm serve m --calculate-kv-scales {SAFE}"
    assert ids(lint(cmd, vllm_version="0.25.0")) == []
    assert ids(lint(cmd, vllm_version="0.32.0")) == ["TQ304"]
    assert "(removed or renamed)" in lint(cmd, vllm_version="0.32.0").findings[0].title
    newer = lint(f"vllm serve m --device-memory-utilization 0.9 {SAFE}", vllm_version="0.25.0").findings[0]
    assert newer.id == "TQ304" and "(added after 0.25.0)" in newer.title and "vLLM 0.32.0 or later" in newer.remediation
    newer_only = f"vllm serve m --kv-cache-dtype ultraquant_4bit {SAFE}"
    assert "TQ302" in ids(lint(newer_only, vllm_version="0.25.0"))
    assert ids(lint(newer_only)) == []


def test_image_tag_selects_schema():
    r = lint("docker run --gpus all --ipc=host -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.25.0 m --calculate-kv-scales")
    assert r.vllm_version == "0.25.0" and ids(r) == []


def test_python_module_form_and_underscores():
    r = lint("python3 -m vllm.entrypoints.openai.api_server --model /m --max_model_len 4096 --host 127.0.0.1")
    assert ids(r) == [] and r.vllm_version == "0.32.0"


def test_errors_flag_and_severities():
    assert lint(f"vllm serve m --kv-cache-dtype nope {SAFE}").errors is True
    warn_only = lint("vllm serve m --host 0.0.0.0")
    assert warn_only.errors is False and warn_only.findings[0].severity is Severity.WARN


def test_secret_never_echoed():
    secret = "sk-live-ZZZ987"
    r = lint(f"vllm serve m --api-key {secret} --host 0.0.0.0")
    text = str(r.to_dict())
    assert secret not in text and "[secret-1]" in text
    assert secret not in r.fixed_command_text


def test_no_vllm_command_is_usage_error():
    from tqdeploy.errors import TQError

    with pytest.raises(TQError, match="no vLLM command found"):
        lint("ls -l /tmp")


def test_hf_token_on_argv_is_flagged_fixed_and_redacted():
    secret = "hf_ArgvSecret555"
    r = lint(f"vllm serve m --hf-token {secret} {SAFE}")
    assert ids(r) == ["TQ323"] and r.findings[0].location == "--hf-token"
    assert r.fixed_argv[-3:] == ["--hf-token", "--host", "127.0.0.1"]
    assert secret not in str(r.to_dict())
    assert ids(lint(f"vllm serve m --hf-token {SAFE}")) == []  # bare: token from `hf auth login`


def test_unknown_secret_looking_option_value_is_redacted():
    secret = "hf_Unknown777"
    r = lint(f"vllm serve m --hf-api-token={secret} {SAFE}")
    assert ids(r) == ["TQ301"]
    assert secret not in str(r.to_dict())


def test_other_image_gets_docker_rules_only():
    r = lint("docker run --gpus device=0,1 myorg/tq-server:1 --not-a-vllm-flag 1")
    assert sorted(ids(r)) == ["TQ313", "TQ330", "TQ331"]
    assert not any(f.id == "TQ301" for f in r.findings)


def test_entrypoint_override_and_optimization_shorthand():
    r = lint(
        "docker run --ipc=host --entrypoint python3 -p 127.0.0.1:8000:8000 vllm/vllm-openai:v0.32.0 "
        "-m vllm.entrypoints.openai.api_server --model m --max-num-seqs 8"
    )
    assert r.findings == []
    assert lint(f"vllm serve m -O 3 {SAFE}").findings == []
    assert lint(f"vllm serve m -O3 {SAFE}").findings == []


def test_config_file_is_reported_as_unchecked():
    r = lint(f"vllm serve m --config serve.yaml {SAFE}")
    assert ids(r) == ["TQ314"] and not r.errors
    assert lint(f"vllm serve m {SAFE}").findings == []


def test_sh_c_wrapper_is_unwrapped_and_rewrapped():
    argv = [
        "/bin/sh",
        "-c",
        "exec vllm serve m --kv-cache-dtype turboquant_5bit --api-key sk-Wrapped42 --host 127.0.0.1",
    ]
    r = lint_command(argv, live=False)
    assert sorted({f.id for f in r.findings}) == ["TQ302", "TQ323"]
    assert r.fixed_argv[:2] == ["/bin/sh", "-c"]
    assert "turboquant_4bit_nc" in r.fixed_argv[2]
    assert "sk-Wrapped42" not in str(r.to_dict())
    clean = lint_command(["bash", "-c", "vllm  serve m   --host '127.0.0.1'"], live=False)
    assert clean.findings == [] and clean.fixed_argv == clean.command


@pytest.mark.parametrize(
    "prefix",
    [
        "uv run",
        "uv run --with vllm==0.32.0",
        "conda run -n serving",
        "numactl --cpunodebind=0 --membind=0",
        "taskset -c 0-15",
        "srun -N1 --gpus=2",
    ],
)
def test_wrapped_commands_are_found(prefix):
    r = lint(f"{prefix} vllm serve m --max-model-len 32x {SAFE}")
    assert ids(r) == ["TQ303"]
    r = lint(f"{prefix} python3 -m vllm.entrypoints.openai.api_server --model m --tensor-paralel-size 2 {SAFE}")
    assert ids(r) == ["TQ301"] and r.fixed_argv[-4:-2] == ["--tensor-parallel-size", "2"]


def test_other_commands_that_mention_vllm_are_not_lint_targets():
    from tqdeploy.errors import TQError

    for cmd in ("pip install vllm", "python3 -m pip install vllm==0.32.0", "python3 -c 'import vllm'"):
        with pytest.raises(TQError, match="no vLLM command found"):
            lint(cmd)
