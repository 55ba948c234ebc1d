"""Probes against fake sysfs/proc trees in temp dirs and an NVML stand-in at the adapter boundary."""

from __future__ import annotations

import http.server
import socket
import sys
import threading
from pathlib import Path

import pytest

from support.doctor_nvml import FakeNVML, NVMLError_GpuIsLost, NVMLError_LibraryNotFound, h200_like
from tqdeploy.probe import ProbeRoots, collect, cudalibs, docker_engine, hostenv, pci, system

AER_COR = (
    "RxErr 3\nBadTLP 0\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 3\n"
)


def make_tree(
    tmp: Path,
    *,
    width="16",
    speed="32.0 GT/s PCIe",
    aspm="default",
    l1=None,
    aer=True,
    osrelease="6.8.0-45-generic",
    cgroup="0::/\n",
    dockerenv=False,
    infiniband=(),
) -> ProbeRoots:
    root, sysfs, proc, shm = tmp / "root", tmp / "sys", tmp / "proc", tmp / "shm"
    for d in (root, shm):
        d.mkdir(parents=True)
    dev = sysfs / "bus" / "pci" / "devices" / "0000:00:06.0"
    dev.mkdir(parents=True)
    for name, value in (
        ("current_link_speed", speed),
        ("max_link_speed", "32.0 GT/s PCIe"),
        ("current_link_width", width),
        ("max_link_width", "16"),
    ):
        (dev / name).write_text(value + "\n")
    if aer:
        (dev / "aer_dev_correctable").write_text(AER_COR)
        (dev / "aer_dev_nonfatal").write_text("Undefined 0\nTOTAL_ERR_NONFATAL 0\n")
        (dev / "aer_dev_fatal").write_text("Undefined 0\nTOTAL_ERR_FATAL 0\n")
    if l1 is not None:
        (dev / "link").mkdir()
        (dev / "link" / "l1_aspm").write_text(l1 + "\n")
    policy = sysfs / "module" / "pcie_aspm" / "parameters"
    policy.mkdir(parents=True)
    (policy / "policy").write_text(
        " ".join(f"[{p}]" if p == aspm else p for p in ("default", "performance", "powersave", "powersupersave")) + "\n"
    )
    for name in infiniband:
        (sysfs / "class" / "infiniband" / name).mkdir(parents=True)
    (proc / "1").mkdir(parents=True)
    (proc / "1" / "cgroup").write_text(cgroup)
    (proc / "sys" / "kernel").mkdir(parents=True)
    (proc / "sys" / "kernel" / "osrelease").write_text(osrelease + "\n")
    if dockerenv:
        (root / ".dockerenv").write_text("")
    return ProbeRoots(root=root, sys=sysfs, proc=proc, shm=shm, env={"HF_HOME": str(tmp / "hf")})


def test_collect_with_nvml_stand_in_and_fake_tree(tmp_path):
    nv = FakeNVML([h200_like(procs=[(4242, 1 << 30)])])
    roots = make_tree(tmp_path, width="8", l1="1", aspm="powersave", dockerenv=True, infiniband=["mlx5_0"])
    snap = collect(roots, nvml=nv, offline=True, docker_client_factory=_refusing_client)
    assert nv.shutdown_called
    assert snap.driver == {
        "present": True,
        "version": "580.159.04",
        "cuda_driver": 13000,
        "nvml_version": "13.580.159.04",
    }
    (g,) = snap.gpus
    assert (g.name, g.compute_capability, g.memory_total) == ("NVIDIA H200", [9, 0], 150754820096)
    assert g.pci_bus_id == "00000000:00:06.0"  # bytes decoded
    assert g.pcie == {"gen_cur": 5, "gen_max": 5, "gen_gpu_max": 5, "width_cur": 16, "width_max": 16}
    assert g.retired_pages_pending is None and "retired_pages_pending" in g.field_errors
    assert g.remapped_rows == {"correctable": 0, "uncorrectable": 0, "pending": 0, "failure": 0}
    assert g.processes == [{"pid": 4242, "used_memory": 1 << 30}]
    assert g.nvlinks == [] and "NotSupported" in g.nvlink_error
    dev = snap.pci["0000:00:06.0"]
    assert dev["current_link_width"] == 8 and dev["max_gen"] == 5 and dev["l1_aspm"] is True
    assert dev["aer"]["correctable"]["TOTAL_ERR_COR"] == 3
    assert snap.aspm_policy == "powersave"
    assert snap.container == {"in_container": True, "markers": ["/.dockerenv"]}
    assert snap.kernel == {"release": "6.8.0-45-generic", "wsl": False}
    assert snap.limits["infiniband"] == ["mlx5_0"]
    assert snap.docker["reachable"] is False and "ConnectionError" in snap.docker["error"]
    assert snap.shm["total_bytes"] > 0
    assert "mirror" not in snap.probe_seconds  # HF_ENDPOINT unset


def _refusing_client():
    raise ConnectionError("connection refused")


def test_two_gpus_with_nvlink_give_nv_level_and_p2p(tmp_path):
    a = h200_like(bus="00000000:00:06.0", nvlinks=["00000000:00:07.0"] * 4)
    b = h200_like(uuid="GPU-1", bus="00000000:00:07.0", nvlinks=["00000000:00:06.0"] * 4)
    nv = FakeNVML([a, b], topology={(0, 1): 10}, p2p={(0, 1, 0): 0, (0, 1, 2): 0})
    snap = collect(make_tree(tmp_path), nvml=nv, offline=True, docker_client_factory=_refusing_client)
    assert [len(g.nvlinks) for g in snap.gpus] == [4, 4]
    (pair,) = snap.topology
    assert pair == {"a": 0, "b": 1, "level": "NV4", "nvlinks": 4, "p2p_read": "OK", "p2p_nvlink": "OK"}


def test_two_gpus_without_nvlink_report_pcie_level_and_p2p_status(tmp_path):
    nv = FakeNVML(
        [h200_like(), h200_like(uuid="GPU-1", bus="00000000:00:07.0")], topology={(0, 1): 50}, p2p={(0, 1, 0): 1}
    )
    snap = collect(make_tree(tmp_path), nvml=nv, offline=True, docker_client_factory=_refusing_client)
    assert snap.topology[0]["level"] == "SYS" and snap.topology[0]["p2p_read"] == "CHIPSET_NOT_SUPPORTED"


def test_no_driver_is_recorded_not_raised(tmp_path):
    nv = FakeNVML([], init_error=NVMLError_LibraryNotFound())
    snap = collect(make_tree(tmp_path), nvml=nv, offline=True, docker_client_factory=_refusing_client)
    assert snap.driver["present"] is False and "LibraryNotFound" in snap.driver["error"]
    assert "nvml" in snap.probe_errors and snap.gpus == []
    assert snap.shm  # the other probes still ran


def test_a_gpu_nvml_cannot_open_is_kept_and_named(tmp_path):
    import tqdeploy.doctor.checks.host  # noqa: F401
    from tqdeploy.doctor.registry import REGISTRY, CheckContext

    nv = FakeNVML([h200_like(), {"handle_error": NVMLError_GpuIsLost()}])
    snap = collect(make_tree(tmp_path), nvml=nv, offline=True, docker_client_factory=_refusing_client)
    assert nv.shutdown_called and "nvml" not in snap.probe_errors
    assert snap.driver["present"] is True and [g.index for g in snap.gpus] == [0, 1]
    assert snap.gpus[0].name == "NVIDIA H200" and "GpuIsLost" in snap.gpus[1].field_errors["handle"]
    assert snap.topology[0]["level"] is None and snap.topology[0]["error"] == "GPU not accessible through NVML"
    ctx = CheckContext(host=snap, options={"vllm_version": "0.32.0"})
    (f,) = REGISTRY["TQ101"].run(ctx)
    assert f.severity.value == "error" and "GPU(s) 1 of 2" in f.title and "Xid" in f.remediation
    assert "GpuIsLost" in f.evidence["not_accessible"][1]
    # the lost GPU is skipped by the per-GPU checks, never reported clean; the readable one is judged
    assert [x.severity.value for x in REGISTRY["TQ104"].run(ctx)] == ["ok", "skipped"]
    assert [x.severity.value for x in REGISTRY["TQ113"].run(ctx)] == ["skipped"]


def test_a_failing_gpu_count_keeps_the_driver_facts(tmp_path):
    class CountFails(FakeNVML):
        def nvmlDeviceGetCount(self):
            raise NVMLError_GpuIsLost()

    nv = CountFails([])
    snap = collect(make_tree(tmp_path), nvml=nv, offline=True, docker_client_factory=_refusing_client)
    assert nv.shutdown_called and snap.driver["version"] == "580.159.04" and snap.gpus == []
    assert "GpuIsLost" in snap.driver["errors"]["gpu_count"]


def test_a_failing_probe_is_recorded_and_the_rest_run(tmp_path):
    roots = make_tree(tmp_path)
    roots.shm = tmp_path / "missing-shm"
    snap = collect(roots, nvml=FakeNVML([h200_like()]), offline=True, docker_client_factory=_refusing_client)
    assert snap.probe_errors["shm"].startswith("FileNotFoundError")
    assert snap.shm == {} and snap.kernel["release"] == "6.8.0-45-generic"


def test_container_markers_from_cgroup_and_wsl_kernel(tmp_path):
    roots = make_tree(
        tmp_path, cgroup="12:memory:/kubepods/burstable/pod1/abc\n", osrelease="5.15.153.1-microsoft-standard-WSL2"
    )
    assert system.probe_container(roots.root, roots.proc) == {"in_container": True, "markers": ["cgroup:kubepods"]}
    assert system.probe_kernel(roots.proc)["wsl"] is True


def test_pci_helpers():
    assert pci.sysfs_bdf("00000000:3B:00.0") == "0000:3b:00.0"
    assert [pci.speed_to_gen(s) for s in ("2.5 GT/s PCIe", "8.0 GT/s PCIe", "32.0 GT/s PCIe", "", "Unknown")] == [
        1,
        3,
        5,
        None,
        None,
    ]
    assert pci.parse_aer(AER_COR)["RxErr"] == 3


def test_absent_device_and_policy_files(tmp_path):
    assert pci.probe_pci_device(tmp_path, "0000:00:06.0") == {"present": False}
    assert pci.probe_aspm_policy(tmp_path) is None


def test_limits_read_through_getrlimit(tmp_path):
    import resource

    fake = {
        resource.RLIMIT_MEMLOCK: (resource.RLIM_INFINITY, resource.RLIM_INFINITY),
        resource.RLIMIT_NOFILE: (1024, 4096),
    }
    lim = system.probe_limits(tmp_path, getrlimit=fake.__getitem__)
    assert lim == {"memlock_soft": -1, "memlock_hard": -1, "nofile_soft": 1024, "nofile_hard": 4096, "infiniband": []}


def test_ldconfig_parsing_and_real_ldconfig():
    text = (
        "\tlibcudnn_ops.so.9 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcudnn_ops.so.9\n"
        "\tlibcudart.so.13 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.13\n"
        "\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1\n"
    )
    out = cudalibs.parse_ldconfig(text)
    assert out["cudnn"] == ["libcudnn_ops.so.9 => /lib/x86_64-linux-gnu/libcudnn_ops.so.9"]
    assert len(out["cudart"]) == 1 and len(out["cuda"]) == 1 and out["nccl"] == []
    real = cudalibs.probe_ldconfig()  # this machine's real linker cache
    assert set(real) == {"cudnn", "cudart", "cuda", "nccl"}


def test_ldconfig_entries_carry_the_versioned_file_name(tmp_path):
    (tmp_path / "libcudnn_ops.so.9.8.0").write_bytes(b"")
    (tmp_path / "libcudnn_ops.so.9").symlink_to("libcudnn_ops.so.9.8.0")
    entry = f"libcudnn_ops.so.9 => {tmp_path}/libcudnn_ops.so.9"
    assert cudalibs.with_real_name(entry) == entry + " (libcudnn_ops.so.9.8.0)"
    plain = f"libcudnn_ops.so.9.8.0 => {tmp_path}/libcudnn_ops.so.9.8.0"
    assert cudalibs.with_real_name(plain) == plain
    assert cudalibs.probe_cuda_libs()["python_env"] == sys.prefix  # the environment the wheels were read from


def test_wheel_metadata_without_importing_torch():
    class Dist:
        def __init__(self, name, version):
            self.metadata, self.version = {"Name": name}, version

    found = cudalibs.probe_wheels(
        lambda: [
            Dist("nvidia-cudnn-cu13", "9.19.0.56"),
            Dist("nvidia_cuda_runtime", "13.0.96"),
            Dist("torch", "2.11.0"),
            Dist("nvidia-ml-py", "13.0"),
        ]
    )
    assert found == {"nvidia-cuda-runtime": "13.0.96", "nvidia-cudnn-cu13": "9.19.0.56"}


def test_docker_probe_reads_engine_info_and_cdi_dirs(tmp_path):
    (tmp_path / "etc" / "cdi").mkdir(parents=True)
    (tmp_path / "etc" / "cdi" / "nvidia.yaml").write_text("cdiVersion: 0.5.0\n")

    class Client:
        def info(self):
            return {"ServerVersion": "26.1.5", "Runtimes": {"runc": {}, "nvidia": {}}, "DefaultRuntime": "runc"}

        def close(self):
            pass

    out = docker_engine.probe_docker(tmp_path, client_factory=Client, which=lambda name: None)
    assert out["reachable"] and out["runtimes"] == ["nvidia", "runc"]
    assert out["cdi_specs"] == {"/etc/cdi": ["nvidia.yaml"]} and out["nvidia_ctk"] is None


def test_env_never_holds_the_token_value(tmp_path):
    env = {"HF_TOKEN": "hf_secretvalue123", "HF_ENDPOINT": "https://user:pw@mirror.example/", "HF_HOME": str(tmp_path)}
    out = hostenv.probe_env(env)
    assert out["hf_token_present"] is True
    assert "hf_secretvalue123" not in repr(out) and "pw" not in out["hf_endpoint"]
    assert out["hf_cache"] == str(tmp_path / "hub")
    assert hostenv.probe_disk(Path(out["hf_cache"]))["measured_at"] == str(tmp_path)


@pytest.mark.parametrize(
    "endpoint",
    ["http://user:pw-53cr3t@[::1", "https://mirror.example/?token=pw-53cr3t", "http://u:pw-53cr3t@host:99999/"],
)
def test_an_endpoint_that_does_not_parse_is_recorded_without_its_secret(tmp_path, endpoint):
    """urlsplit raises on `[::1` and on port 99999; the recorded endpoint must not raise nor keep the secret."""
    out = hostenv.probe_env({"HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path)})
    assert "pw-53cr3t" not in out["hf_endpoint"] and "***" in out["hf_endpoint"]


class _Quiet(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self):
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def mirror_url():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_mirror_reachable_on_loopback_server(mirror_url):
    out = hostenv.probe_mirror(mirror_url)
    assert out["reachable"] and out["status"] == 200 and out["seconds"] < 2


def test_mirror_refused_within_the_timeout():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    out = hostenv.probe_mirror(f"http://127.0.0.1:{port}")
    assert not out["reachable"] and "Refused" in out["error"] and out["seconds"] <= 2.5


class _Proxy(http.server.BaseHTTPRequestHandler):
    """A forward proxy on loopback: answers every request itself and records the absolute URL asked for."""

    seen: list[str] = []
    status = 200

    def do_HEAD(self):
        type(self).seen.append(self.path)
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def proxy_url():
    _Proxy.seen, _Proxy.status = [], 200
    server = http.server.HTTPServer(("127.0.0.1", 0), _Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_port}"  # no scheme, as proxies are often written
    server.shutdown()
    server.server_close()


def test_mirror_is_tested_through_the_proxy_the_environment_names(proxy_url):
    out = hostenv.probe_mirror("http://mirror.invalid/", {"HTTP_PROXY": proxy_url})
    assert out["reachable"] and out["status"] == 200 and out["proxy"] == f"http://{proxy_url}"
    assert _Proxy.seen == ["http://mirror.invalid/"]
    # NO_PROXY sends it direct, where the name does not resolve
    out = hostenv.probe_mirror("http://mirror.invalid/", {"HTTP_PROXY": proxy_url, "NO_PROXY": "mirror.invalid"})
    assert not out["reachable"] and out["proxy"] is None and _Proxy.seen == ["http://mirror.invalid/"]


def test_mirror_behind_a_failing_proxy_keeps_the_5xx(proxy_url):
    _Proxy.status = 502
    out = hostenv.probe_mirror("http://mirror.invalid/", {"http_proxy": "http://user:pw@" + proxy_url})
    assert out["status"] == 502 and "pw" not in out["proxy"]


def test_mirror_that_never_answers_is_bounded():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts connections into the backlog, never answers
    try:
        out = hostenv.probe_mirror(f"http://127.0.0.1:{listener.getsockname()[1]}", {}, timeout=0.3)
    finally:
        listener.close()
    assert not out["reachable"] and out["error"] and out["seconds"] < 1.5


def test_collect_tests_the_mirror_unless_offline(tmp_path, mirror_url):
    roots = make_tree(tmp_path)
    roots.env = {"HF_ENDPOINT": mirror_url, "HF_HOME": str(tmp_path / "hf")}
    snap = collect(roots, nvml=FakeNVML([]), offline=False, docker_client_factory=_refusing_client)
    assert snap.mirror["reachable"] is True
    snap = collect(roots, nvml=FakeNVML([]), offline=True, docker_client_factory=_refusing_client)
    assert snap.mirror == {}


def test_missing_nvidia_ml_py_reads_as_no_driver(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    snap = collect(make_tree(tmp_path), offline=True, docker_client_factory=_refusing_client)
    assert snap.driver["present"] is False and "nvidia-ml-py is not installed" in snap.driver["error"]


def test_wheel_versions_from_dist_info_names_match_importlib_metadata(tmp_path):
    """The fast path (folder names) gives what reading every METADATA gives, on real dist-info layouts."""
    import importlib.metadata

    for name, version in (
        ("nvidia_cudnn_cu13", "9.19.0.56"),
        ("nvidia_nccl_cu12", "2.28.9"),
        ("nvidia_cuda_runtime_cu12", "12.9.79"),
        ("nvidia_nvtx_cu12", "12.9.79"),  # not a library the probe reports
        ("numpy", "2.3.1"),
    ):
        info = tmp_path / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n")
    fast = cudalibs._dist_info_versions([str(tmp_path), str(tmp_path / "missing")])
    slow = cudalibs.probe_wheels(lambda: importlib.metadata.distributions(path=[str(tmp_path)]))
    assert (
        fast
        == slow
        == {
            "nvidia-cuda-runtime-cu12": "12.9.79",
            "nvidia-cudnn-cu13": "9.19.0.56",
            "nvidia-nccl-cu12": "2.28.9",
        }
    )
