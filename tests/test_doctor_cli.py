"""`tqdeploy doctor` end to end: the real probe on this machine, snapshot round trip, exit codes, bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.doctor_hosts import HOSTS, variant
from tqdeploy.doctor.registry import REGISTRY, Check

REPO = Path(__file__).resolve().parent.parent
H200 = str(HOSTS / "h200-1gpu.json")


def verdicts(doc: dict) -> list[tuple]:
    return [(f["id"], f["severity"], f["title"], json.dumps(f["evidence"], sort_keys=True)) for f in doc["findings"]]


def test_real_probe_on_this_machine_reports_no_driver_cleanly(tqdeploy_exe):
    res = subprocess.run([tqdeploy_exe, "doctor", "--offline", "--json"], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in res.stderr and res.stderr == ""
    doc = json.loads(res.stdout)
    assert doc["schema"] == "tqdeploy.doctor/1" and doc["tool_version"]
    by_id = {}
    for f in doc["findings"]:
        assert set(f) == {"id", "severity", "title", "evidence", "remediation", "area"}
        assert "exception" not in f["evidence"], f  # no check crashed on a GPU-less host
        by_id.setdefault(f["id"], []).append(f)
    # this machine has no GPU: no driver is an error (a serving host needs one), GPU checks skip
    assert by_id["TQ101"][0]["severity"] == "error" and "NVML" in by_id["TQ101"][0]["title"]
    for cid in ("TQ102", "TQ103", "TQ104", "TQ105", "TQ106", "TQ107", "TQ108", "TQ109", "TQ110", "TQ112", "TQ113"):
        assert [f["severity"] for f in by_id[cid]] == ["skipped"], cid
        assert "TQ101" in by_id[cid][0]["evidence"]["reason"], cid
    assert [f["severity"] for f in by_id["TQ125"]] == ["ok"]  # the missing driver is TQ101's, not a probe failure
    assert res.returncode == 1 == doc["summary"]["exit_code"]
    assert doc["summary"]["error"] >= 1 and doc["summary"]["total"] == len(doc["findings"])
    assert all(f["id"].startswith("TQ1") for f in doc["findings"])  # no model checks without --model


def test_snapshot_out_then_replay_gives_the_same_verdicts(run_cli, tmp_path):
    snap = tmp_path / "host.json"
    code1, out1, _ = run_cli("doctor", "--offline", "--json", "--snapshot-out", str(snap))
    code2, out2, _ = run_cli("doctor", "--json", "--snapshot", str(snap))
    assert json.loads(snap.read_text())["schema"] == "tqdeploy.snapshot/1"
    assert verdicts(json.loads(out1)) == verdicts(json.loads(out2))
    assert code1 == code2


def test_replay_of_the_h200_recording_passes(run_cli):
    code, out, err = run_cli("doctor", "--json", "--snapshot", H200)
    doc = json.loads(out)
    assert code == 0 and doc["summary"]["error"] == 0 and doc["summary"]["warn"] == 0
    assert doc["source"] == f"snapshot {H200}"


def test_human_view_is_a_table_with_remediation_lines(run_cli, tmp_path):
    p = tmp_path / "x8.json"
    p.write_text(json.dumps(variant("x8")))
    code, out, _ = run_cli("doctor", "--snapshot", str(p))
    assert code == 0  # a warning alone does not fail by default
    assert "TQ108" in out and "PCIe link x8, capable of x16" in out and "fix: reseat the card" in out
    assert "0 error(s), 1 warning(s)" in out
    code, _, _ = run_cli("doctor", "--snapshot", str(p), "--fail-on", "warn")
    assert code == 1


def test_older_vllm_release_changes_the_cuda_verdict(run_cli, tmp_path):
    p = tmp_path / "old.json"
    p.write_text(json.dumps(variant("old-driver")))  # CUDA 12.8 driver
    code, out, _ = run_cli("doctor", "--json", "--snapshot", str(p))
    assert code == 1 and "TQ102" in [f["id"] for f in json.loads(out)["findings"] if f["severity"] == "error"]
    code, out, _ = run_cli("doctor", "--json", "--snapshot", str(p), "--vllm-version", "0.19.1")
    (f,) = [f for f in json.loads(out)["findings"] if f["id"] == "TQ102"]
    assert f["severity"] == "warn" and code == 0
    code, out, _ = run_cli("doctor", "--json", "--snapshot", str(p), "--cuda", "12.8")  # e.g. a self-built image
    (f,) = [f for f in json.loads(out)["findings"] if f["id"] == "TQ102"]
    assert f["severity"] == "ok" and f["evidence"]["build_cuda_from"] == "given by the operator"


def test_bad_inputs_are_one_line_errors(run_cli, tmp_path):
    notjson = tmp_path / "bad.json"
    notjson.write_text("{not json")
    other = tmp_path / "other.json"
    other.write_text('{"schema": "something/else"}')
    misshapen = tmp_path / "misshapen.json"
    misshapen.write_text('{"schema": "tqdeploy.snapshot/1", "driver": "580"}')
    bad_gpu = tmp_path / "bad_gpu.json"
    bad_gpu.write_text('{"schema": "tqdeploy.snapshot/1", "gpus": [{"index": 0, "pcie": []}]}')
    cases = [
        (("doctor", "--snapshot", str(tmp_path / "missing.json")), "does not exist"),
        (("doctor", "--snapshot", str(notjson)), "is not JSON"),
        (("doctor", "--snapshot", str(other)), "is not a tqdeploy.snapshot/1 document"),
        (("doctor", "--snapshot", str(tmp_path)), "not a readable text file"),
        (("doctor", "--snapshot", str(misshapen)), "section 'driver' must be a JSON object"),
        (("doctor", "--snapshot", str(bad_gpu)), "section 'gpus[].pcie' must be a JSON object"),
        (("doctor", "--snapshot", H200, "--vllm-version", "latest"), "--vllm-version 'latest' is not a version"),
        (("doctor", "--snapshot", H200, "--fail-on", "info"), "--fail-on 'info'"),
        (("doctor", "--snapshot", H200, "--cuda", "cu129"), "--cuda 'cu129' is not a CUDA major.minor version"),
    ]
    for args, message in cases:
        code, out, err = run_cli(*args)
        assert code == 2, args
        assert err.startswith("tqdeploy: error: ") and message in err and "Traceback" not in err, (args, err)
        assert out == ""


def test_unwritable_snapshot_out_fails_without_a_partial_file(run_cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run_cli("doctor", "--snapshot", H200, "--snapshot-out", str(blocker / "snap.json"))
    assert code == 2 and "cannot write snapshot" in err
    assert list(tmp_path.iterdir()) == [blocker]


def test_a_check_that_raises_becomes_an_error_finding(run_cli, monkeypatch):
    def broken(ctx):
        raise ZeroDivisionError("boom")

    monkeypatch.setitem(REGISTRY, "TQ199", Check(id="TQ199", area="test", title="broken", func=broken))
    code, out, _ = run_cli("doctor", "--json", "--snapshot", H200)
    doc = json.loads(out)
    (f,) = [f for f in doc["findings"] if f["id"] == "TQ199"]
    assert (
        f["severity"] == "error" and "broken" in f["title"] and "ZeroDivisionError: boom" in f["evidence"]["exception"]
    )
    assert code == 1 and len(doc["findings"]) > 20  # the other checks still ran


def test_model_checks_without_model_are_left_out(monkeypatch):
    from tqdeploy.doctor.registry import CheckContext
    from tqdeploy.doctor.run import select_checks

    monkeypatch.setitem(
        REGISTRY, "TQ299", Check(id="TQ299", area="model", title="m", func=lambda c: None, needs=("model",))
    )
    assert "TQ299" not in select_checks(CheckContext(host=object()))
    assert "TQ299" in select_checks(CheckContext(host=object(), model={"weights_bytes": 1}))


@pytest.mark.parametrize(
    "docker_host,severity,title",
    [
        # the engine is asked over its unix socket without the SDK; here no engine listens there
        ("unix://{tmp}/no.sock", "warn", "Docker engine not reachable"),
        ("tcp://127.0.0.1:9", "info", "SDK not installed"),  # only the SDK speaks tcp:// / ssh://
    ],
)
def test_runs_from_a_plain_copy_without_the_docker_sdk(tmp_path, docker_host, severity, title):
    """As on the H200 host: PYTHONPATH to a copy of the package, no docker module importable."""
    shutil.copytree(REPO / "tool", tmp_path / "tool", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "checks", tmp_path / "checks")
    code = (
        "import sys; sys.modules['docker'] = None; import tqdeploy; assert tqdeploy.__file__.startswith(sys.argv[1]); "
        "from tqdeploy.cli import main; sys.exit(main(['doctor', '--offline', '--json']))"
    )
    env = {"PYTHONPATH": str(tmp_path / "tool"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    env["DOCKER_HOST"] = docker_host.format(tmp=tmp_path)
    res = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60, env=env
    )
    assert "Traceback" not in res.stderr, res.stderr
    doc = json.loads(res.stdout)
    (f,) = [f for f in doc["findings"] if f["id"] == "TQ119"]
    assert f["severity"] == severity and title in f["title"], f
    assert res.returncode == 1  # no driver here


def test_doctor_does_not_import_torch_or_vllm(tqdeploy_exe):
    python = tqdeploy_exe.rsplit("/", 1)[0] + "/python"
    code = (
        "import sys; from tqdeploy.doctor.run import run_doctor; run_doctor(vllm_version='0.32.0', offline=True); "
        "print(','.join(m for m in ('torch', 'vllm', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.strip() == ""


def test_model_option_adds_the_checkpoint_checks(run_cli):
    model = REPO / "tests" / "fixtures" / "models" / "llama-3.1-8b"
    code, out, _ = run_cli("doctor", "--json", "--snapshot", H200, "--model", str(model))
    ids = {f["id"] for f in json.loads(out)["findings"]}
    assert {"TQ201", "TQ206"} <= ids and "TQ101" in ids
    code, out, err = run_cli("doctor", "--snapshot", H200, "--model", "no-such-folder")
    assert code == 2 and err.startswith("tqdeploy: error: ") and out == ""
