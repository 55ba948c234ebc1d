"""The doctor's multi-node checks (TQ127-TQ130), each on a failing and a passing node: real build records (the
rendered multinode.json of the tiny two-node spec and of the 2 x 8-GPU golden), real ports and this host's own
interfaces for the probe side."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

import tqdeploy.doctor.checks  # noqa: F401  registers the checks
from support.doctor_hosts import h200
from tqdeploy.doctor.checks.host.multinode import node_facts
from tqdeploy.doctor.registry import REGISTRY, CheckContext
from tqdeploy.findings import Severity
from tqdeploy.snapshot import HostSnapshot

REPO = Path(__file__).resolve().parents[1]
GPU_RECORD = json.loads((REPO / "tests" / "golden" / "multinode" / "multinode.json").read_text())


def _run(cid: str, facts: dict, gpus: int = 8):
    data = h200()
    data["gpus"] = (data["gpus"] * 8)[:gpus]
    ctx = CheckContext(host=HostSnapshot.from_dict(data), options={"multinode": facts})
    (finding,) = REGISTRY[cid].run(ctx)
    return finding


def _facts(record=None, **over):
    base = {
        "record": dict(record or GPU_RECORD),
        "ifnames": {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"},
        "interfaces": ["eth0", "lo"],
        "ports_free": {"29501": True, "8100": True},
        "local_vllm": "0.32.0",
    }
    return base | over


@pytest.mark.parametrize(
    "cid,facts,gpus,severity",
    [
        ("TQ127", _facts(), 8, Severity.OK),
        ("TQ127", _facts(ports_free={"29501": False, "8100": True}), 8, Severity.ERROR),
        ("TQ127", _facts(GPU_RECORD | {"api_port": 29501}), 8, Severity.ERROR),
        ("TQ128", _facts(), 8, Severity.OK),
        ("TQ128", _facts(ifnames={"GLOO_SOCKET_IFNAME": "ib7", "NCCL_SOCKET_IFNAME": "ib7"}), 8, Severity.ERROR),
        ("TQ128", _facts(ifnames={"GLOO_SOCKET_IFNAME": None, "NCCL_SOCKET_IFNAME": None}), 8, Severity.WARN),
        ("TQ129", _facts(), 8, Severity.OK),
        ("TQ129", _facts(GPU_RECORD | {"gpus_per_node": 4}), 8, Severity.ERROR),
        ("TQ129", _facts(), 1, Severity.ERROR),
        ("TQ130", _facts(), 8, Severity.OK),
        ("TQ130", _facts(local_vllm="0.31.0"), 8, Severity.ERROR),
        ("TQ130", _facts(GPU_RECORD | {"ray_version": "2.60.0"}), 8, Severity.WARN),
    ],
)
def test_each_check_fails_and_passes(cid, facts, gpus, severity):
    found = _run(cid, facts, gpus)
    assert found.severity == severity, found
    assert found.id == cid and (severity == Severity.OK or found.remediation)


def test_without_a_build_the_checks_are_left_out():
    ctx = CheckContext(host=HostSnapshot.from_dict(h200()), options={})
    assert all(REGISTRY[c].run(ctx) == [] for c in ("TQ127", "TQ128", "TQ129", "TQ130"))


def test_the_probe_reads_the_build_and_this_host(tmp_path, monkeypatch):
    build = tmp_path / "b"
    build.mkdir()
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        (build / "multinode.json").write_text(json.dumps(GPU_RECORD | {"master_port": port}))
        monkeypatch.setenv("NCCL_SOCKET_IFNAME", "lo")
        facts = node_facts(build)
    assert facts["ports_free"][str(port)] is False and "lo" in facts["interfaces"]
    assert facts["ifnames"] == {"GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "lo"}
    assert _run("TQ127", facts).severity == Severity.ERROR
