"""TQ201-TQ206 through the check framework and through `tqdeploy doctor --model` on a recorded H200 snapshot."""

import json
from pathlib import Path

import pytest

from tqdeploy.doctor.registry import CheckContext, run_checks
from tqdeploy.model import load_model_facts
from tqdeploy.snapshot import HostSnapshot

FIX = Path(__file__).parent / "fixtures"
MODELS = FIX / "models"
H200 = FIX / "hosts" / "h200-1gpu.json"
IDS = ["TQ201", "TQ202", "TQ203", "TQ204", "TQ205", "TQ206"]


@pytest.fixture(scope="module", autouse=True)
def _register():
    import tqdeploy.doctor.checks.model  # noqa: F401


def run(model, host=None, **options):
    facts = load_model_facts(str(MODELS / model))
    found = run_checks(CheckContext(host=host, model=facts, options=options), IDS)
    return {f.id: f for f in found}, found


def host(gpus=1, cc=(9, 0)):
    snap = HostSnapshot.load(H200)
    snap.gpus = [snap.gpus[0]] * gpus
    snap.gpus[0].compute_capability = list(cc)
    return snap


def test_good_deployment_passes():
    by_id, found = run(
        "llama-3.1-8b", host(), tensor_parallel_size=1, max_model_len=131072, kv_cache_dtype="turboquant_4bit_nc"
    )
    assert by_id["TQ203"].severity.value == "ok" and by_id["TQ204"].severity.value == "ok"
    assert by_id["TQ205"].severity.value == "ok" and by_id["TQ206"].severity.value == "ok"
    assert not [f for f in found if f.severity.value == "error"]


def test_bad_deployment_is_caught():
    by_id, _ = run(
        "qwen3.6-27b",
        host(gpus=4, cc=(7, 5)),
        tensor_parallel_size=3,
        max_model_len=300000,
        kv_cache_dtype="turboquant_4bit_nc",
        vllm_version="0.25.0",
    )
    assert by_id["TQ203"].severity.value == "error" and "1, 2, 4, 8" in by_id["TQ203"].remediation
    assert by_id["TQ204"].severity.value == "error" and "262144" in by_id["TQ204"].remediation
    tq = [
        f
        for f in run_checks(
            CheckContext(
                host=host(cc=(7, 5)),
                model=load_model_facts(str(MODELS / "qwen3.6-27b")),
                options={"vllm_version": "0.25.0"},
            ),
            ["TQ205"],
        )
    ]
    assert {f.evidence["code"] for f in tq} == {"TQ_HYBRID_BUG", "TQ_COMPUTE_CAPABILITY"}


def test_model_only_checks_run_without_host_and_206_skips():
    facts = load_model_facts(str(MODELS / "deepseek-v2-lite"))
    found = {f.id: f for f in run_checks(CheckContext(model=facts), IDS)}
    assert found["TQ206"].severity.value == "skipped"
    assert found["TQ203"].severity.value == "info" and "valid tensor parallel sizes" in found["TQ203"].title
    assert found["TQ205"].severity.value == "error"  # TurboQuant has no MLA backend
    assert found["TQ201"].severity.value == "info"  # no safetensors headers: weight size unknown


def test_every_check_has_a_doc_page(run_cli):
    for cid in IDS:
        code, out, _ = run_cli("explain", cid)
        assert code == 0 and out.startswith(f"# {cid}:")


def test_doctor_model_json(run_cli):
    code, out, err = run_cli("doctor", "--snapshot", str(H200), "--model", str(MODELS / "qwen3.6-27b"), "--json")
    data = json.loads(out)
    ids = {f["id"]: f for f in data["findings"]}
    assert set(IDS) <= set(ids)
    assert ids["TQ202"]["severity"] == "info"
    assert ids["TQ205"]["severity"] == "warn"  # hybrid + TurboQuant on 0.32.0: smoke-test advice


def _fail_case_inputs(tmp_path):
    """A 3-GPU host of compute capability 7.5 with 4 GiB each, and a checkpoint whose config has
    head_dim 96 and a turbo_quant_config with a preset vLLM does not have."""
    snap = json.loads(H200.read_text())
    gpu = dict(snap["gpus"][0], compute_capability=[7, 5], memory_total=4 << 30, name="small GPU")
    snap["gpus"] = [dict(gpu, index=i, pci_bus_id=f"00000000:00:0{6 + i}.0") for i in range(3)]
    host_file = tmp_path / "host.json"
    host_file.write_text(json.dumps(snap))
    cfg = json.loads((MODELS / "llama-3.1-8b" / "config.json").read_text())
    cfg.update(head_dim=96, turbo_quant_config={"preset": "turboquant_2bit"})
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(cfg))
    return host_file, model


def test_doctor_model_cli_fail_cases(run_cli, tmp_path):
    host_file, model = _fail_case_inputs(tmp_path)
    code, out, _ = run_cli("doctor", "--snapshot", str(host_file), "--model", str(model), "--json")
    assert code == 1  # errors found (--fail-on error is the default)
    found: dict[str, list[dict]] = {}
    for f in json.loads(out)["findings"]:
        found.setdefault(f["id"], []).append(f)
    sev = {cid: {f["severity"] for f in fs} for cid, fs in found.items() if cid in IDS}
    assert sev["TQ202"] == {"error"} and "turboquant_2bit" in found["TQ202"][0]["title"]
    assert sev["TQ203"] == {"error"}  # TP=3 from the host's 3 GPUs: 32 heads do not divide
    assert "1, 2, 4, 8" in found["TQ203"][0]["remediation"]
    codes = {f["evidence"]["code"] for f in found["TQ205"]}
    assert codes == {"TQ_COMPUTE_CAPABILITY", "TQ_HEAD_DIM"} and sev["TQ205"] == {"error"}
    assert sev["TQ206"] == {"error"}  # ~14 GiB of bf16 weights / 3 GPUs > 4 GiB x 0.92 per GPU
    # the human table shows the same verdicts
    code, out, _ = run_cli("doctor", "--snapshot", str(host_file), "--model", str(model))
    assert code == 1 and "TQ205" in out and "head_dim 96 is not a power of two" in out


def test_doctor_model_cli_pass_cases(run_cli):
    code, out, _ = run_cli("doctor", "--snapshot", str(H200), "--model", str(MODELS / "llama-3.1-8b"), "--json")
    sev = {f["id"]: f["severity"] for f in json.loads(out)["findings"] if f["id"] in IDS}
    assert sev == {"TQ201": "info", "TQ202": "info", "TQ203": "ok", "TQ204": "info", "TQ205": "ok", "TQ206": "ok"}
