"""`tqdeploy init`: a commented spec from the model's config and a host snapshot, valid as written."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from tqdeploy.deployspec import load_spec
from tqdeploy.deployspec.command import vllm_command
from tqdeploy.lint.specflags import lint_vllm_command

TESTS = Path(__file__).resolve().parent
MODELS = TESTS / "fixtures" / "models"
H200 = TESTS / "fixtures" / "hosts" / "h200-1gpu.json"


def test_init_without_inputs_reproduces_the_embedded_default(run_cli, tmp_path):
    out = tmp_path / "tqdeploy.toml"
    code, stdout, err = run_cli("init", "--out", str(out), "--no-probe")
    assert code == 0, err
    assert load_spec(out).spec_hash == load_spec().spec_hash
    text = out.read_text()
    assert "# --kv-cache-dtype, e.g. turboquant_4bit_nc" in text
    assert "# max_num_seqs = (unset: vLLM's own default applies)" in text


def test_init_reads_the_model_config_and_the_host_snapshot(run_cli, tmp_path):
    out = tmp_path / "tqdeploy.toml"
    code, stdout, err = run_cli(
        "init", "--model", str(MODELS / "qwen3.6-27b"), "--snapshot", str(H200), "--out", str(out), "--json"
    )
    assert code == 0, err
    chosen = json.loads(stdout)["chosen"]
    assert chosen["vllm.max_model_len"] == "max_position_embeddings from the model's config.json"
    assert chosen["resources.gpus"].startswith("1 GPU(s) seen: NVIDIA H200")
    # tensor-parallel size and KV dtype are tqdeploy plan's recommendation for this model on this host
    from tqdeploy.model import load_model_facts
    from tqdeploy.plan import make_plan
    from tqdeploy.snapshot import HostSnapshot

    gpu = HostSnapshot.load(H200).gpus[0]
    plan = make_plan(
        load_model_facts(str(MODELS / "qwen3.6-27b")),
        gpu_memory_bytes=gpu.memory_total,
        max_model_len=262144,
        num_gpus=1,
        tp=1,
        vllm_version="0.32.0",
        compute_capability=tuple(gpu.compute_capability),
        gpu_name=gpu.name,
    )
    assert chosen["vllm.kv_cache_dtype"] == f"tqdeploy plan: {plan.recommendation_reason}"
    data = tomllib.loads(out.read_text())
    config = json.loads((MODELS / "qwen3.6-27b" / "config.json").read_text())
    native = config.get("max_position_embeddings") or config["text_config"]["max_position_embeddings"]
    assert data["vllm"]["max_model_len"] == native
    assert data["vllm"]["kv_cache_dtype"] == plan.recommended and data["vllm"]["tensor_parallel_size"] == 1
    assert data["model"]["path"] == str((MODELS / "qwen3.6-27b").resolve())  # absolute: build-dir relative otherwise
    assert "repo" not in data["model"]
    spec = load_spec(out)
    lint_vllm_command(spec, vllm_command(spec))  # the written file is a valid spec, vLLM flags included
    assert spec.name == "qwen3-6-27b" and spec.model.served_name == "qwen3.6-27b"
    code, _, err = run_cli("build", str(out), "--out", str(tmp_path / "b"))
    assert code == 0, err


def test_init_takes_the_kv_dtype_from_the_turbo_quant_config_hint(run_cli, tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    config = json.loads((MODELS / "llama-3.1-8b" / "config.json").read_text())
    config["turbo_quant_config"] = {"preset": "turboquant_k8v4"}
    (model / "config.json").write_text(json.dumps(config))
    out = tmp_path / "s.toml"
    code, stdout, err = run_cli("init", "--model", str(model), "--no-probe", "--out", str(out), "--name", "llama8b")
    assert code == 0, err
    text = out.read_text()
    assert 'kv_cache_dtype = "turboquant_k8v4"' in text
    assert "# chosen: the checkpoint's turbo_quant_config hint (a tqdeploy field; vLLM ignores it)" in text
    assert load_spec(out).name == "llama8b"


def test_init_refuses_to_overwrite_without_force(run_cli, tmp_path):
    out = tmp_path / "tqdeploy.toml"
    out.write_text("# mine\n")
    code, _, err = run_cli("init", "--out", str(out), "--no-probe")
    assert code == 2 and "already exists" in err and "--force" in err
    assert out.read_text() == "# mine\n"
    assert run_cli("init", "--out", str(out), "--no-probe", "--force")[0] == 0
    assert out.read_text().startswith("# tqdeploy deployment spec")


def test_init_with_a_missing_model_is_one_line_and_writes_nothing(run_cli, tmp_path):
    out = tmp_path / "tqdeploy.toml"
    code, _, err = run_cli("init", "--model", str(tmp_path / "nope"), "--no-probe", "--out", str(out))
    assert code == 2 and err.startswith("tqdeploy: error: ") and "Traceback" not in err
    assert not out.exists()


def test_plan_on_a_host_keeps_the_checkpoints_hint(run_cli, tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    config = json.loads((MODELS / "llama-3.1-8b" / "config.json").read_text())
    config["turbo_quant_config"] = {"key_bits": 4, "value_bits": 4}
    (model / "config.json").write_text(json.dumps(config))
    out = tmp_path / "s.toml"
    code, stdout, err = run_cli("init", "--model", str(model), "--snapshot", str(H200), "--out", str(out), "--json")
    assert code == 0, err
    chosen = json.loads(stdout)["chosen"]
    assert chosen["vllm.kv_cache_dtype"].startswith("tqdeploy plan: the checkpoint's turbo_quant_config hint")
    assert tomllib.loads(out.read_text())["vllm"]["kv_cache_dtype"] == "turboquant_4bit_nc"


def test_init_refuses_a_bad_name_by_its_option_and_writes_nothing(run_cli, tmp_path):
    out = tmp_path / "tqdeploy.toml"
    code, stdout, err = run_cli("init", "--no-probe", "--name", "Qwen_Bad", "--out", str(out))
    assert code == 2 and stdout == ""
    assert err.splitlines()[0] == (
        "tqdeploy: error: --name 'Qwen_Bad' is not a lowercase DNS label (a-z, 0-9, '-', at most 53 chars)"
    )
    assert not out.exists()


def test_init_from_the_cpu_demo_leaves_the_hosts_gpus_alone(run_cli, tmp_path):
    out = tmp_path / "tqdeploy.toml"
    code, stdout, err = run_cli("init", "--from", "tiny-cpu-demo", "--snapshot", str(H200), "--out", str(out), "--json")
    assert code == 0, err
    assert json.loads(stdout)["chosen"]["resources.gpus"].startswith("the cpu variant")
    data = tomllib.loads(out.read_text())
    assert data["variant"] == "cpu" and data["resources"]["gpus"] == []
    assert load_spec(out).spec_hash == load_spec(embedded="tiny-cpu-demo").spec_hash


def test_a_build_without_a_spec_uses_the_tqdeploy_toml_init_wrote_and_says_so(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("init", "--no-probe", "--name", "mine")
    assert code == 0 and "tqdeploy build" in err + _
    code, stdout, _ = run_cli("build", "--out", "b")
    assert code == 0
    assert stdout.splitlines()[0].startswith("built mine from tqdeploy.toml (spec sha256 ")
    assert "  note: spec: ./tqdeploy.toml (no spec was given); `--embedded NAME` builds an embedded spec" in stdout
    assert run_cli("build", "tqdeploy.toml", "--out", "b")[1].startswith("built mine from tqdeploy.toml ")
    (tmp_path / "tqdeploy.toml").unlink()  # none here: the embedded default, as before
    code, stdout, _ = run_cli("build", "--out", "c")
    assert code == 0 and stdout.startswith("built qwen36-27b-tq from embedded:qwen36-27b-tq ")


def test_check_drift_names_the_spec_that_restores_the_build(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli("build", "--embedded", "tiny-cpu-demo", "--out", "b")[0] == 0
    (tmp_path / "b" / "nginx.conf").unlink()
    code, stdout, _ = run_cli("build", "--check", "b")
    assert code == 1 and "fix: run `tqdeploy build b/tqdeploy.toml --out b` to restore the files" in stdout
    with open(tmp_path / "b" / "serve.sh", "a") as fh:
        fh.write("# edited\n")
    code, stdout, _ = run_cli("build", "--check", "b", "--embedded", "tiny-cpu-demo")
    fix = "tqdeploy build --embedded tiny-cpu-demo --out b --force"
    assert code == 1 and f"fix: run `{fix}` to restore" in stdout
    assert run_cli(*fix.split()[1:])[0] == 0  # run as printed, it restores the build
    assert run_cli("build", "--check", "b")[0] == 0


def test_init_puts_the_hosts_hf_endpoint_first_in_the_mirrors(run_cli, tmp_path):
    snap = json.loads(H200.read_text())
    for endpoint, mirrors, why in (
        (
            "https://hf-mirror.internal.example/",
            ["https://hf-mirror.internal.example", "https://huggingface.co"],
            "this host's HF_ENDPOINT first",
        ),
        ("https://***@hf-mirror.internal.example", ["https://huggingface.co"], "was not copied"),
    ):
        snap["env"] = {"hf_endpoint": endpoint, "hf_token_present": False}
        (tmp_path / "snap.json").write_text(json.dumps(snap))
        out = tmp_path / "s.toml"
        code, stdout, err = run_cli(
            "init", "--snapshot", str(tmp_path / "snap.json"), "--out", str(out), "--force", "--json"
        )
        assert code == 0, err
        assert why in json.loads(stdout)["chosen"]["model.mirrors"]
        assert tomllib.loads(out.read_text())["model"]["mirrors"] == mirrors
        assert "***" not in out.read_text()


def test_init_into_a_directory_or_below_a_file_is_one_line(run_cli, tmp_path):
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    for out, message in (
        (tmp_path / "adir", f"{tmp_path / 'adir'} is a directory"),
        (tmp_path / "afile" / "s.toml", f"cannot write {tmp_path / 'afile' / 's.toml'}: "),
    ):
        code, stdout, err = run_cli("init", "--no-probe", "--force", "--out", str(out))
        assert code == 2 and stdout == "" and "internal error" not in err
        assert err.startswith(f"tqdeploy: error: {message}")
    assert list((tmp_path / "adir").iterdir()) == [] and (tmp_path / "afile").read_text() == "x"
