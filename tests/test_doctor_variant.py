"""`tqdeploy doctor --variant cpu`: a host is judged for the build that will run there. The CPU build needs no
GPU, so on a GPU-less host its GPU, driver, CUDA and NVIDIA-runtime checks are skipped with the reason; for
the gpu variant (the default) the same host still gets its GPU errors."""

from __future__ import annotations

import json

import pytest

from support.doctor_hosts import variant
from tqdeploy.doctor.registry import REGISTRY
from tqdeploy.doctor.variant import CPU_REASON, needs_gpu


def _doctor(run_cli, snap, *extra):
    code, out, err = run_cli("doctor", "--json", "--snapshot", str(snap), *extra)
    return code, {f["id"]: f for f in json.loads(out)["findings"]}, err


@pytest.fixture
def no_gpu_host(tmp_path):
    snap = tmp_path / "no-driver.json"
    snap.write_text(json.dumps(variant("no-driver")))
    return snap


def test_no_gpu_host_has_gpu_errors_for_the_gpu_variant(run_cli, no_gpu_host):
    code, by_id, _ = _doctor(run_cli, no_gpu_host)
    assert code == 1 and by_id["TQ101"]["severity"] == "error"
    code, explicit, _ = _doctor(run_cli, no_gpu_host, "--variant", "gpu")
    assert code == 1 and explicit["TQ101"]["severity"] == "error"


def test_no_gpu_host_has_no_gpu_errors_for_the_cpu_variant(run_cli, no_gpu_host):
    code, by_id, _ = _doctor(run_cli, no_gpu_host, "--variant", "cpu")
    gpu_ids = sorted(i for i, c in REGISTRY.items() if needs_gpu(c) and i in by_id)
    assert {"TQ101", "TQ102", "TQ103", "TQ108", "TQ112", "TQ120", "TQ121"} <= set(gpu_ids)
    for cid in gpu_ids:
        assert by_id[cid]["severity"] == "skipped" and by_id[cid]["evidence"]["reason"] == CPU_REASON, cid
    assert not [f for f in by_id.values() if f["severity"] == "error"]
    assert code == 0
    assert by_id["TQ114"]["severity"] == "ok"  # host checks the CPU build needs still run (/dev/shm)


def test_cpu_variant_still_reports_what_the_cpu_build_needs(run_cli, tmp_path):
    host = variant("no-driver")
    host["shm"] = {**host["shm"], "total_bytes": 64 * 1024**2, "free_bytes": 64 * 1024**2}
    snap = tmp_path / "small-shm.json"
    snap.write_text(json.dumps(host))
    code, by_id, _ = _doctor(run_cli, snap, "--variant", "cpu", "--fail-on", "warn")
    assert by_id["TQ114"]["severity"] in ("warn", "error") and code == 1


def test_unknown_variant_is_bad_input(run_cli, no_gpu_host):
    code, out, err = run_cli("doctor", "--snapshot", str(no_gpu_host), "--variant", "tpu")
    assert code == 2 and out == "" and "--variant 'tpu' is not one of gpu, cpu" in err and "fix:" in err
