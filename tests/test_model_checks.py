"""TQ201-TQ206 through the check framework and through `tqdeploy doctor --model` on a recorded H200 snapshot."""
import json
from pathlib import Path

import pytest

from tqdeploy.checkbase import CheckContext, run_checks
from tqdeploy.model import load_model_facts
from tqdeploy.snapshot import HostSnapshot

FIX = Path(__file__).parent / "fixtures"
MODELS = FIX / "models"
H200 = FIX / "hosts" / "h200-1gpu.json"
IDS = ["TQ201", "TQ202", "TQ203", "TQ204", "TQ205", "TQ206"]


@pytest.fixture(scope="module", autouse=True)
def _register():
    import tqdeploy.modelchecks  # noqa: F401


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
    by_id, found = run("llama-3.1-8b", host(), tensor_parallel_size=1, max_model_len=131072,
                       kv_cache_dtype="turboquant_4bit_nc")
    assert by_id["TQ203"].severity.value == "ok" and by_id["TQ204"].severity.value == "ok"
    assert by_id["TQ205"].severity.value == "ok" and by_id["TQ206"].severity.value == "ok"
    assert not [f for f in found if f.severity.value == "error"]


def test_bad_deployment_is_caught():
    by_id, _ = run("qwen3.6-27b", host(cc=(7, 5)), tensor_parallel_size=3, max_model_len=300000,
                   kv_cache_dtype="turboquant_4bit_nc", vllm_version="0.25.0")
    assert by_id["TQ203"].severity.value == "error" and "1, 2, 4, 8" in by_id["TQ203"].remediation
    assert by_id["TQ204"].severity.value == "error" and "262144" in by_id["TQ204"].remediation
    tq = [f for f in run_checks(CheckContext(host=host(cc=(7, 5)), model=load_model_facts(str(MODELS / "qwen3.6-27b")),
                                             options={"vllm_version": "0.25.0"}), ["TQ205"])]
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
