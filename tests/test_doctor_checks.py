"""Every host check on the converted H200 recording (pass) and on a degraded variant (fail)."""

from __future__ import annotations

import copy

import pytest

import tqdeploy.doctor.checks.host  # noqa: F401  registers the checks
from support.doctor_hosts import GIB, h200, h200_live, two_gpus, variant
from tqdeploy.doctor.registry import REGISTRY, CheckContext
from tqdeploy.model.facts import ModelFacts
from tqdeploy.snapshot import HostSnapshot


def run(check_id: str, data: dict, model=None, **options):
    opts = {"vllm_version": "0.32.0"} | options
    ctx = CheckContext(host=HostSnapshot.from_dict(copy.deepcopy(data)), model=model, options=opts)
    return REGISTRY[check_id].run(ctx)


def severities(findings) -> list[str]:
    return [f.severity.value for f in findings]


def with_host(**sections) -> dict:
    d = h200()
    d.update(sections)
    return d


# (check id, passing host, failing host, the failing severity)
CASES = [
    ("TQ101", h200(), variant("no-driver"), "error"),
    ("TQ102", h200(), variant("old-driver"), "error"),
    ("TQ104", h200(), variant("ecc-pending"), "error"),
    ("TQ106", h200(), variant("mig-on"), "warn"),
    ("TQ107", h200(), variant("busy"), "error"),
    ("TQ107", h200(), variant("busy-small"), "warn"),
    ("TQ108", h200(), variant("x8"), "warn"),
    ("TQ109", h200(), variant("gen3"), "warn"),
    ("TQ111", h200(), variant("aspm-powersave"), "warn"),
    ("TQ112", two_gpus(h200(), nvlink=True), two_gpus(h200(), nvlink=False), "warn"),
    ("TQ113", two_gpus(h200(), nvlink=True), two_gpus(h200(), nvlink=False), "warn"),
    ("TQ114", h200(), variant("shm64"), "warn"),  # one GPU: no worker processes, no broadcast ring
    ("TQ114", two_gpus(h200(), nvlink=True), two_gpus(variant("shm64"), nvlink=True), "error"),
]


@pytest.mark.parametrize("check_id,good,bad,severity", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_check_passes_on_h200_and_fails_on_degraded_variant(check_id, good, bad, severity):
    assert set(severities(run(check_id, good))) == {"ok"}
    assert severity in severities(run(check_id, bad))


def test_compute_capability_floors():
    d = h200()
    assert severities(run("TQ103", d)) == ["ok"]
    d["gpus"][0].update(name="Tesla T4", compute_capability=[7, 5])
    assert severities(run("TQ103", d)) == ["warn"]  # vLLM runs, TurboQuant does not (issue #43576)
    d["gpus"][0].update(name="Tesla V100", compute_capability=[7, 0])
    assert severities(run("TQ103", d)) == ["error"]


def test_driver_cuda_minor_older_is_a_warning_and_unknown_release_is_info():
    d = h200()
    d["driver"]["cuda_driver"] = 12080
    (f,) = run("TQ102", d, vllm_version="0.19.1")  # 0.19 builds are CUDA 12.9: minor version compatibility
    assert f.severity.value == "warn" and f.evidence["build_cuda"] == "12.9"
    (f,) = run("TQ102", variant("old-driver"))
    assert "cu129" in f.remediation  # the CUDA 12.9 variant of 0.32 fits a 12.x driver only partly; it is named
    (f,) = run("TQ102", h200(), vllm_version="0.8.5")
    assert f.severity.value == "info" and f.evidence["build_cuda"] is None


def test_ecc_remapping_failure_and_ecc_off():
    d = h200()
    d["gpus"][0]["remapped_rows"]["failure"] = 1
    assert severities(run("TQ104", d)) == ["error"]
    d = h200()
    d["gpus"][0]["ecc_mode"] = [0, 0]
    assert severities(run("TQ104", d)) == ["info"]


def test_persistence_off_warns():
    d = h200()
    assert severities(run("TQ105", d)) == ["ok"]
    d["gpus"][0]["persistence"] = False
    assert severities(run("TQ105", d)) == ["warn"]


def test_memory_check_skips_without_memory_figures():
    d = h200()
    d["gpus"][0].update(memory_total=None, memory_used=None)
    assert severities(run("TQ107", d)) == ["skipped"]


def test_memory_check_follows_the_utilization_option():
    d = variant("busy")  # 40 GiB used of 140 GiB: fails at 0.92, fits at 0.5
    assert "error" in severities(run("TQ107", d))
    assert severities(run("TQ107", d, gpu_memory_utilization=0.5)) == ["warn"]


def test_generation_drop_at_idle_is_info_not_a_fault():
    (f,) = run("TQ109", variant("idle-gen1"))
    assert f.severity.value == "info"
    assert "idle" in f.title and "idle" in f.evidence["note"]


def test_aer_counters():
    d = h200()
    assert severities(run("TQ110", d)) == ["skipped"]  # the H200 VM exposes none
    d["pci"]["0000:00:06.0"]["aer"] = {
        "correctable": {"RxErr": 0, "TOTAL_ERR_COR": 0},
        "nonfatal": {"TOTAL_ERR_NONFATAL": 0},
        "fatal": {"TOTAL_ERR_FATAL": 0},
    }
    assert severities(run("TQ110", d)) == ["ok"]
    d["pci"]["0000:00:06.0"]["aer"]["correctable"] = {"RxErr": 7, "TOTAL_ERR_COR": 7}
    assert severities(run("TQ110", d)) == ["warn"]
    d["pci"]["0000:00:06.0"]["aer"]["fatal"] = {"TOTAL_ERR_FATAL": 1}
    assert severities(run("TQ110", d)) == ["error"]


def test_per_device_l1_aspm_warns():
    d = h200()
    d["pci"]["0000:00:06.0"]["l1_aspm"] = True
    assert severities(run("TQ111", d)) == ["warn"]


def test_inactive_nvlink_and_cross_socket_pairs():
    d = two_gpus(h200(), nvlink=True)
    d["gpus"][1]["nvlinks"][3]["active"] = False
    assert "warn" in severities(run("TQ112", d))
    d = two_gpus(h200(), nvlink=True)
    d["topology"][0]["level"] = "SYS"
    assert severities(run("TQ113", d)) == ["info"]


def test_pair_evidence_holds_the_level_and_both_p2p_statuses():
    (f,) = run("TQ113", two_gpus(h200(), nvlink=False))
    assert f.evidence == {
        "matrix": {"0-1": "PHB"},
        "p2p_read": {"0-1": "CHIPSET_NOT_SUPPORTED"},
        "p2p_nvlink": {"0-1": "NOT_SUPPORTED"},
    }
    assert "0-1" in f.title


def test_one_gpu_topology_checks_skip():
    assert severities(run("TQ112", h200())) == ["skipped"]
    assert severities(run("TQ113", h200())) == ["skipped"]


def test_container_memlock_nofile_wsl():
    assert severities(run("TQ115", with_host(container={"in_container": False, "markers": []}))) == ["ok"]
    assert severities(run("TQ115", with_host(container={"in_container": True, "markers": ["/.dockerenv"]}))) == ["info"]
    lim = {
        "memlock_soft": 65536,
        "memlock_hard": 65536,
        "nofile_soft": 1024,
        "nofile_hard": 1048576,
        "infiniband": ["mlx5_0"],
    }
    assert severities(run("TQ116", with_host(limits=lim))) == ["warn"]
    assert severities(run("TQ116", with_host(limits=lim | {"memlock_soft": -1}))) == ["ok"]
    assert severities(run("TQ117", with_host(limits=lim))) == ["ok"]  # vLLM raises the soft limit itself
    assert severities(run("TQ117", with_host(limits=lim | {"nofile_hard": 4096}))) == ["warn"]
    assert severities(run("TQ118", with_host(kernel={"release": "6.8.0-45-generic", "wsl": False}))) == ["ok"]
    assert severities(
        run("TQ118", with_host(kernel={"release": "5.15.153.1-microsoft-standard-WSL2", "wsl": True}))
    ) == ["info"]
    assert severities(run("TQ118", with_host(kernel={"release": "4.19.104-microsoft-standard", "wsl": True}))) == [
        "warn"
    ]


def test_docker_engine_and_nvidia_runtime():
    base = {
        "sdk": "7.2.0",
        "reachable": True,
        "error": "",
        "server_version": "26.1.5",
        "runtimes": ["runc"],
        "default_runtime": "runc",
        "cdi_specs": {},
        "nvidia_ctk": None,
        "docker_cli": "/usr/bin/docker",
    }
    assert severities(run("TQ119", with_host(docker=base))) == ["ok"]
    assert severities(run("TQ119", with_host(docker=base | {"reachable": False, "error": "refused"}))) == ["warn"]
    assert severities(run("TQ119", h200())) == ["info"]  # the H200 host has no docker SDK
    assert severities(run("TQ120", with_host(docker=base))) == ["warn"]
    assert severities(run("TQ120", with_host(docker=base | {"runtimes": ["nvidia", "runc"]}))) == ["ok"]
    cdi = base | {"cdi_specs": {"/etc/cdi": ["nvidia.yaml"]}}
    assert severities(run("TQ120", with_host(docker=cdi))) == ["ok"]


def test_cuda_library_wheels_of_another_major_warn():
    d = h200()
    assert severities(run("TQ121", d)) == ["ok"]
    d["cuda_libs"]["wheels"] = {"nvidia-cudnn-cu12": "9.1.0.70"}
    (f,) = run("TQ121", d)
    assert f.severity.value == "warn" and "nvidia-cudnn-cu12" in f.title


def test_disk_token_and_mirror():
    disk = {"path": "/m/hub", "measured_at": "/m", "free_bytes": 200 * 10**9, "total_bytes": 10**12}
    assert severities(run("TQ122", with_host(disk=disk))) == ["ok"]
    assert severities(run("TQ122", with_host(disk=disk | {"free_bytes": 20 * 10**9}))) == ["warn"]
    big = ModelFacts(source="Qwen/Qwen3.6-27B@main", weight_bytes=300 * 10**9)
    assert severities(run("TQ122", with_host(disk=disk), model=big)) == ["error"]
    local = ModelFacts(source="/models/qwen", weight_bytes=300 * 10**9)  # already on disk: nothing to download
    assert severities(run("TQ122", with_host(disk=disk), model=local)) == ["ok"]
    assert severities(run("TQ123", with_host(env={"hf_token_present": True}))) == ["ok"]
    (f,) = run("TQ123", with_host(env={"hf_token_present": False}))
    assert f.severity.value == "info" and f.evidence == {"HF_TOKEN": "absent"}
    env = {"hf_token_present": False, "hf_endpoint": "http://127.0.0.1:9"}
    assert severities(run("TQ124", with_host(env=env))) == ["skipped"]  # offline: no mirror section
    ok = {"endpoint": "http://127.0.0.1:9", "reachable": True, "status": 200, "error": "", "seconds": 0.01}
    assert severities(run("TQ124", with_host(env=env, mirror=ok))) == ["ok"]
    bad = ok | {"reachable": False, "status": None, "error": "ConnectionRefusedError"}
    assert severities(run("TQ124", with_host(env=env, mirror=bad))) == ["error"]


def test_probe_errors_become_findings():
    assert severities(run("TQ125", h200())) == ["ok"]
    d = h200()
    d["probe_errors"] = {"shm": "FileNotFoundError: /dev/shm"}
    (f,) = run("TQ125", d)
    assert f.severity.value == "warn" and f.evidence["probe"] == "shm"
    # without a driver the NVML failure is TQ101's, not repeated here
    assert severities(run("TQ125", variant("no-driver"))) == ["ok"]


def test_no_driver_skips_every_gpu_check_cleanly():
    d = variant("no-driver")
    for cid in ("TQ102", "TQ103", "TQ104", "TQ105", "TQ106", "TQ107", "TQ108", "TQ109", "TQ110", "TQ112", "TQ113"):
        assert severities(run(cid, d)) == ["skipped"], cid


def test_live_h200_snapshot_has_no_errors():
    """The snapshot `tqdeploy doctor --snapshot-out` wrote on the lent H200 host."""
    for cid in sorted(REGISTRY):
        if cid.startswith("TQ1"):
            assert "error" not in severities(run(cid, h200_live())), cid
    assert severities(run("TQ101", h200_live())) == ["ok"]
    assert run("TQ103", h200_live())[0].evidence["compute_capability"] == "9.0"
    # what the server loads (the torch venv's 9.19 wheel) differs from the system's libcudnn (9.14 there)
    (libs,) = run("TQ121", h200_live())
    assert libs.evidence["cudnn"] == "nvidia-cudnn-cu13 9.19.0.56 (wheel)"
    assert "libcudnn_ops.so.9.14.0" in libs.evidence["system_cudnn"][0]
    assert libs.evidence["wheels_of_python_env"] == "/opt/torch/.venv"


def test_every_host_check_has_a_doc_page():
    from tqdeploy.resources import doc_path

    for cid in sorted(REGISTRY):
        if cid.startswith("TQ1"):
            text = doc_path(cid).read_text()
            for heading in ("## What", "## Why", "## Evidence", "## Fix"):
                assert heading in text, (cid, heading)


def test_gib_helper_matches_fixture_units():
    assert h200()["gpus"][0]["memory_total"] / GIB > 140


def test_driver_without_gpus_and_the_driver_floor_from_the_table():
    d = h200()
    d["gpus"] = []
    (f,) = run("TQ101", d)
    assert f.severity.value == "error" and "no GPU visible" in f.title
    (f,) = run("TQ101", variant("no-driver"))
    assert ">= 580 for vLLM 0.32.0 (CUDA 13.0)" in f.remediation  # checks/cuda_compat.json, not a literal
    (f,) = run("TQ101", variant("no-driver"), vllm_version="0.19.1")
    assert ">= 525 for vLLM 0.19.1 (CUDA 12.9)" in f.remediation
    (f,) = run("TQ101", variant("no-driver"), vllm_version="0.8.5")
    assert "see TQ102" in f.remediation


def test_driver_major_too_old_names_forward_compatibility():
    (f,) = run("TQ102", variant("old-driver"))
    assert "cuda-compat-13-0" in f.remediation and "VLLM_ENABLE_CUDA_COMPATIBILITY=1" in f.remediation
    (f,) = run("TQ102", variant("old-driver"), vllm_version="0.20.0")  # env switch not verified before 0.32
    assert "cuda-compat-13-0" in f.remediation and "LD_LIBRARY_PATH" in f.remediation
    assert "VLLM_ENABLE_CUDA_COMPATIBILITY" not in f.remediation


def test_ecc_pending_change_uncorrectable_rows_and_retired_pages():
    d = h200()
    d["gpus"][0]["ecc_mode"] = [1, 0]
    assert severities(run("TQ104", d)) == ["warn"]
    d = h200()
    d["gpus"][0]["remapped_rows"]["uncorrectable"] = 2
    (f,) = run("TQ104", d)
    assert f.severity.value == "warn" and "2 row(s)" in f.title
    d = h200()
    d["gpus"][0]["retired_pages_pending"] = True  # pre-Ampere page retirement
    assert severities(run("TQ104", d)) == ["error"]


def test_mig_change_pending_warns():
    d = h200()
    d["gpus"][0]["mig_mode"] = [0, 1]
    (f,) = run("TQ106", d)
    assert f.severity.value == "warn" and "pending" in f.title


def test_busy_gpu_names_each_process_and_its_memory():
    (f,) = run("TQ107", variant("busy"))
    assert f.evidence["processes"] == ["pid 4242: 40.0 GiB"] and "4242" in f.remediation
    d = variant("busy-small")
    d["gpus"][0]["processes"][0]["used_memory"] = None  # NVML hides it inside some containers
    (f,) = run("TQ107", d)
    assert f.evidence["processes"] == ["pid 4242: memory not reported"]


def test_wsl_with_a_recent_kernel_names_the_pinned_memory_switch():
    (f,) = run("TQ118", with_host(kernel={"release": "5.15.153.1-microsoft-standard-WSL2", "wsl": True}))
    assert "VLLM_WSL2_ENABLE_PIN_MEMORY=1" in f.remediation


def test_nvidia_runtime_when_the_engine_is_not_reachable():
    down = {
        "sdk": "7.2.0",
        "reachable": False,
        "error": "refused",
        "server_version": None,
        "runtimes": [],
        "default_runtime": None,
        "cdi_specs": {},
        "nvidia_ctk": None,
        "docker_cli": "/usr/bin/docker",
    }
    assert severities(run("TQ120", with_host(docker=down))) == ["warn"]
    assert severities(run("TQ120", with_host(docker=down | {"nvidia_ctk": "/usr/bin/nvidia-ctk"}))) == ["info"]
    assert severities(run("TQ120", with_host(docker=down | {"docker_cli": None}))) == ["skipped"]


def test_cuda_libraries_from_the_linker_cache_only():
    d = h200()
    d["cuda_libs"] = {"wheels": {}, "ldconfig": {"cudnn": [], "cudart": [], "cuda": [], "nccl": []}}
    assert severities(run("TQ121", d)) == ["info"]
    d["cuda_libs"]["ldconfig"]["cudnn"] = ["libcudnn_ops.so.9 => /lib/libcudnn_ops.so.9 (libcudnn_ops.so.9.8.0)"]
    (f,) = run("TQ121", d)
    assert f.severity.value == "ok" and "9.8.0" in f.title


def test_mirror_behind_a_proxy_that_answers_5xx_is_an_error():
    env = {"hf_token_present": False, "hf_endpoint": "https://mirror.example"}
    bad = {
        "endpoint": "https://mirror.example",
        "proxy": "http://proxy:3128",
        "reachable": True,
        "status": 502,
        "error": "",
        "seconds": 0.1,
    }
    (f,) = run("TQ124", with_host(env=env, mirror=bad))
    assert f.severity.value == "error" and "HTTP 502" in f.title and "proxy" in f.title
    assert severities(run("TQ124", with_host(env=env, mirror=bad | {"status": 404}))) == ["ok"]
