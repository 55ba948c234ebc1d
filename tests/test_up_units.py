"""Fast tests of up's parts on recorded real logs and real files: classification, phases, logs, state, GPU.

Logs: tests/fixtures/up/cpu-kv-too-small.log (written by `up` here: CPU vLLM 0.32.0, --kv-cache-memory-bytes
1048576, max-model-len 2048) and the recorded vLLM logs in tests/fixtures/vllm-logs/.
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from support.specs import spec_with
from tqdeploy.runtime import logs, phases, state
from tqdeploy.runtime.classify import StartContext, classify_exit, classify_log
from tqdeploy.runtime.logstamp import split

H200 = FIXTURES / "vllm-logs" / "h200-vllm-0.25.0"
CTX = StartContext(build_dir="/srv/build", port=8000, max_model_len=2048, model_dir="/srv/build/models/tiny")


def _lines(path: Path) -> list[str]:
    return [split(line)[1] for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]


def test_kv_too_small_from_a_real_cpu_log_quotes_vllms_estimate():
    finding = classify_exit(_lines(FIXTURES / "up" / "cpu-kv-too-small.log"), 1, CTX)
    assert finding.id == "TQ402"
    assert finding.evidence["estimated_max_model_len"] == 896
    assert "max_model_len = 896" in finding.remediation
    assert "tqdeploy plan --model /srv/build/models/tiny --max-model-len 2048" in finding.remediation


@pytest.mark.skipif(not H200.is_dir(), reason="shared fixtures not present")
def test_turboquant_hybrid_crash_on_vllm_0_25_is_unsupported_dtype():
    finding = classify_exit(_lines(H200 / "q36like-tq-hybrid-crash.log"), 1, CTX)
    assert finding.id == "TQ406"
    assert "Unknown TurboQuant cache dtype" in finding.evidence["line"]


@pytest.mark.skipif(not H200.is_dir(), reason="shared fixtures not present")
def test_phases_of_a_real_h200_cold_start_come_in_order():
    seen = []
    phase = "process"
    for line in _lines(H200 / "dense-cold.log"):
        phase = phases.advance(phase, line)
        if not seen or seen[-1] != phase:
            seen.append(phase)
    # --load-format dummy: no "Loading weights" line; "Model loading took" ends the weights phase.
    assert seen == ["process", "compile", "kv_cache", "cuda_graphs", "api_server"]
    cpu = [phases.phase_of(line) for line in _lines(FIXTURES / "vllm-logs" / "cpu-vllm-0.32.0" / "tiny-cold.log")]
    assert [p for i, p in enumerate(cpu) if p and p not in cpu[:i]] == ["weights", "compile", "kv_cache", "api_server"]


def test_a_clean_start_log_has_no_failure_signature():
    # The CPU cold start warns about `OSError: [Errno 24] Too many open files`: not a port problem.
    log = FIXTURES / "vllm-logs" / "cpu-vllm-0.32.0" / "tiny-cold.log"
    if not log.exists():
        pytest.skip("shared fixtures not present")
    assert classify_log(_lines(log), CTX) is None


@pytest.mark.parametrize(
    ("code", "lines", "expected"),
    [
        (-9, [], "TQ408"),
        (0, ["RuntimeError: Engine core initialization failed. See root cause above."], "TQ407"),
        (0, ["INFO shutting down"], "TQ411"),
        (66, ["serve.sh: exit 66 (model-missing): /models/tiny has no config.json"], "TQ412"),
        (67, ["launch_vllm.py: exit 67 (key-file): API key file /k holds a space"], "TQ413"),
        (67, [], "TQ419"),  # an exit status alone says nothing about why (issue 35)
        (68, ["launch_vllm.py: exit 68 (environment): VLLM_RUST_FRONTEND_PATH is set"], "TQ427"),
        (3, ["ValueError: something else"], "TQ419"),
        (2, ["api_server.py: error: unrecognized arguments: --no-such-flag"], "TQ405"),
        (1, ["OSError: [Errno 98] Address already in use"], "TQ401"),
    ],
)
def test_exit_classification(code, lines, expected):
    finding = classify_exit(lines, code, CTX)
    assert finding.id == expected
    assert finding.remediation and finding.severity.value == "error"


def test_sigkill_names_the_oom_killer():
    finding = classify_exit([], -9, CTX)
    assert finding.evidence["signal"] == "SIGKILL" and "dmesg" in finding.remediation


def test_every_runtime_finding_id_has_a_doc_page():
    source = "\n".join(p.read_text() for p in (REPO / "tool" / "tqdeploy" / "runtime").glob("*.py"))
    ids = set(re.findall(r'"(TQ4\d\d)"', source))
    assert len(ids) >= 20
    missing = [i for i in sorted(ids) if not (REPO / "checks" / "docs" / f"{i}.md").is_file()]
    assert not missing


def test_since_parses_durations_and_epochs():
    assert logs.parse_since("90s", now=1000.0) == 910.0
    assert logs.parse_since("5m", now=1000.0) == 700.0
    assert logs.parse_since("1796113272.5") == 1796113272.5
    with pytest.raises(Exception, match="--since"):
        logs.parse_since("yesterday")


def test_logs_since_and_stamps_on_a_stamped_file(tmp_path):
    log_dir = state.logs_dir(tmp_path)
    log_dir.mkdir(parents=True)
    (log_dir / "server.log").write_text("1796000100.000|old line\n1796000200.500|new line\nunstamped\n")
    assert list(logs.read_lines(tmp_path, 1796000150.0, False, False)) == ["new line", "unstamped"]
    stamped = list(logs.read_lines(tmp_path, None, True, False))
    assert stamped[1] == "2026-11-30T00:56:40.500Z new line"


def test_state_round_trip_and_corrupt_file(tmp_path):
    state.new_state(tmp_path, port=8000, pid=12)
    state.update_state(tmp_path, exit_code=0)
    data = state.read_state(tmp_path)
    assert data["schema"] == "tqdeploy.state/1" and data["pid"] == 12 and data["exit_code"] == 0
    assert data["api_key_file"] is None
    state.state_path(tmp_path).write_text("[1, 2")
    with pytest.raises(state.CorruptState, match="state.json is corrupt") as err:
        state.read_state(tmp_path)
    assert "down" in err.value.remediation and "--force" in err.value.remediation


def test_gpu_memory_and_preflight_with_an_nvml_stand_in(monkeypatch, tmp_path):
    """NVML is faked at its adapter boundary (this host has no GPU); the rest is the real code."""
    from support.doctor_nvml import FakeNVML, h200_like
    from tqdeploy.probe import nvml
    from tqdeploy.runtime import gpu, preflight

    gib = 1 << 30
    fake = FakeNVML([h200_like(memory=(140 * gib, 100 * gib), procs=[(4242, 99 * gib)])])
    monkeypatch.setattr(nvml, "load_adapter", lambda: fake)
    gpus = gpu.gpu_memory()
    assert gpus[0]["used_mib"] == 100 * 1024 and gpus[0]["processes"] == [{"pid": 4242, "used_mib": 99 * 1024}]

    class Dep:
        variant = "gpu"
        spec = spec_with(gpu_memory_utilization=0.9, tensor_parallel_size=1, gpus="all")

    [finding] = preflight.gpu_findings(Dep())  # type: ignore[arg-type]
    assert finding.id == "TQ403" and finding.evidence["holders"][0]["pid"] == 4242


def test_up_s_doctor_weighs_the_build_s_gpu_memory_utilization(monkeypatch):
    """Found on the H200: a build at gpu_memory_utilization 0.45 beside another server holding 64 GiB was refused
    by `up`'s doctor at vLLM's default 0.92 (TQ107 "needs 129.17 GiB free") though vLLM starts there. The doctor
    the command passes in now gets the build's settings; NVML is faked at its adapter boundary."""
    from support.doctor_nvml import FakeNVML, h200_like
    from tqdeploy import probe
    from tqdeploy.commands.up import _doctor_findings
    from tqdeploy.findings import Severity
    from tqdeploy.runtime import preflight

    gib = 1 << 30
    held = FakeNVML([h200_like(memory=(140 * gib, 64 * gib), procs=[(4242, 63 * gib)])])
    monkeypatch.setattr(probe, "load_adapter", lambda: held)  # the doctor's probe (tqdeploy.probe.collect)

    def verdict(util: float | None):
        class Dep:
            variant = "gpu"
            spec = spec_with(version="0.25.0", gpu_memory_utilization=util, tensor_parallel_size=1)

        return preflight.doctor_summary(Dep(), _doctor_findings)  # type: ignore[arg-type]

    half, line = verdict(0.45)  # 63 GiB needed, 76 GiB free
    assert "TQ101" not in half.evidence["errors"] and "TQ107" not in half.evidence["errors"], line  # GPU seen
    default, line = verdict(None)  # unset: vLLM's default, 0.92 x 140 GiB, does not fit
    assert default.severity == Severity.ERROR and "TQ107" in default.evidence["errors"], line


def test_the_doctor_passed_into_preflight_gives_its_verdict_and_a_broken_one_only_warns():
    """runtime never imports doctor: `up` gets the doctor as a callable (commands/up.py passes tqdeploy.doctor's)."""
    from tqdeploy.findings import Finding, Severity
    from tqdeploy.runtime import preflight

    class Dep:
        variant = "cpu"
        spec = spec_with(
            version="0.32.0", gpu_memory_utilization=0.45, max_model_len=512, dtype=None, kv_cache_dtype=None
        )

    asked: list = []

    def doctor(version: str, serving) -> list[Finding]:
        asked.append((version, dict(serving)))
        return [
            Finding("TQ101", Severity.ERROR, "no NVIDIA driver", {}, "install it", "driver"),  # GPU-only: not on CPU
            Finding("TQ117", Severity.ERROR, "open-files limit too low", {}, "raise it", "system"),
            Finding("TQ114", Severity.WARN, "/dev/shm is small", {}, "", "system"),
        ]

    verdict, line = preflight.doctor_summary(Dep(), doctor)  # type: ignore[arg-type]
    # the build's settings, the unset ones (dtype, kv_cache_dtype) left out
    assert asked == [("0.32.0", {"gpu_memory_utilization": 0.45, "max_model_len": 512, "tensor_parallel_size": 1})]
    assert verdict.id == "TQ417" and verdict.severity == Severity.ERROR
    assert line == "doctor: 1 error(s), 1 warning(s) (TQ117 open-files limit too low)" == verdict.title
    assert verdict.evidence == {"errors": ["TQ117"], "warnings": ["TQ114"]}

    def broken(version: str, serving) -> list[Finding]:
        raise RuntimeError("unknown vLLM version " + version)

    verdict, line = preflight.doctor_summary(Dep(), broken)  # type: ignore[arg-type]
    assert (verdict.severity, line) == (Severity.WARN, "doctor: could not run")
    assert verdict.evidence == {"error": "unknown vLLM version 0.32.0"}


def test_no_nvml_means_no_gpu_section(monkeypatch):
    from tqdeploy.probe import nvml
    from tqdeploy.runtime import gpu

    def broken():
        raise nvml.NoDriver("NVML Shared Library Not Found")

    monkeypatch.setattr(nvml, "load_adapter", broken)
    assert gpu.gpu_memory() is None


def test_kv_too_small_on_a_gpu_suggests_a_turboquant_dtype_that_fits_from_the_planner():
    # vLLM's message (v1/core/kv_cache_utils.py) for a Llama-3.1-8B config with 2 GiB of KV memory left.
    line = (
        "ValueError: To serve at least one request with the model's max seq len (32768), (4.00 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (2.00 GiB). Based on the available memory, "
        "the estimated maximum model length is 16384. Try increasing `gpu_memory_utilization`"
    )
    ctx = StartContext("/b", max_model_len=32768, model_dir=str(FIXTURES / "models" / "llama-3.1-8b"))
    finding = classify_log([line], ctx)
    assert finding.id == "TQ402" and finding.evidence["estimated_max_model_len"] == 16384
    fits = finding.evidence["fits_with"]
    assert fits["turboquant_4bit_nc"] >= 32768 and "bfloat16" not in fits
    assert 'kv_cache_dtype = "turboquant_4bit_nc"' in finding.remediation
    assert "max_model_len = 16384" in finding.remediation


H200_NO_VLLM = (  # printed on the H200 by serve.sh's `vllm` shim run with a python that had no vLLM
    "/opt/torch/.venv/bin/python3: Error while finding module specification for 'vllm.entrypoints.cli.main' "
    "(ModuleNotFoundError: No module named 'vllm')"
)


def test_a_python_without_vllm_in_the_log_is_tq424():
    import subprocess
    import sys

    finding = classify_exit([H200_NO_VLLM], 1, CTX)
    assert finding.id == "TQ424" and finding.evidence["line"] == H200_NO_VLLM
    assert "--python" in finding.remediation
    # The lines this interpreter (tqdeploy's venv: no vllm) prints itself, for the shim's three shapes.
    for argv in (["-m", "vllm.entrypoints.cli.main", "serve"], ["-m", "vllm"], ["-c", "import vllm"]):
        proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1, proc.stderr
        assert classify_exit(proc.stderr.splitlines(), 1, CTX).id == "TQ424", proc.stderr


def test_a_broken_vllm_build_is_not_a_missing_vllm():
    line = "ModuleNotFoundError: No module named 'vllm._C'"
    assert classify_log([line], CTX) is None
    assert classify_exit([line], 1, CTX).id == "TQ419"


def test_the_marker_names_the_folder_by_its_resolved_path_not_its_contents(tmp_path):
    import shutil

    from tqdeploy.runtime.marker import trust_state

    build = tmp_path / "build"
    (build / ".tqdeploy").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(build)
    assert state.deployment_marker(build) == state.deployment_marker(link)  # one folder, two spellings
    shutil.copytree(build, tmp_path / "copy", symlinks=True)
    assert state.deployment_marker(tmp_path / "copy") != state.deployment_marker(build)
    moved = tmp_path / "moved"
    build.rename(moved)
    old_marker = state.deployment_marker(link)
    (tmp_path / "build").mkdir()  # built again where it was: the same deployment (its old server is found)
    assert state.deployment_marker(tmp_path / "build") == old_marker != state.deployment_marker(moved)
    state.new_state(moved, marker=state.deployment_marker(moved), started_at=1e9)
    own = state.read_record(moved)  # parsed and validated once: trust_state takes the typed record
    assert own is not None and own.marker == state.deployment_marker(moved)
    assert trust_state(moved, own).started_at == 1e9 and not trust_state(moved, own).findings
    copied = trust_state(tmp_path / "copy", own)
    assert copied.started_at is None and copied.findings[0].id == "TQ425"
    assert copied.findings[0].evidence["recorded_marker"] == own.marker
    unmarked = trust_state(moved, dataclasses.replace(own, marker=None))
    assert unmarked.started_at is None and "records no deployment marker" in unmarked.findings[0].title
    soon = dataclasses.replace(own, started_at=time.time() + 3600)  # a valid time, but not one already past
    trusted = trust_state(moved, soon)
    assert trusted.started_at is None and trusted.findings[0].id == "TQ425"
    assert trust_state(moved, None).findings == [] and trust_state(moved, None).marker == own.marker
    for bad in ("yesterday", float("nan"), 1e300, True):  # never reach trust_state: the one reader refuses them
        state.update_state(moved, started_at=bad)
        with pytest.raises(state.CorruptState, match="field started_at"):
            state.read_record(moved)


def test_the_guard_refuses_init_group_one_the_caller_and_other_users():
    import os

    from tqdeploy.runtime.guard import refusal
    from tqdeploy.runtime.procs import read_proc

    me = read_proc(os.getpid())
    assert me is not None and refusal(me) == "the caller itself"
    init = read_proc(1)
    assert init is not None and refusal(init) == "pid 1 (init)"
    parent = read_proc(os.getppid())
    assert parent is not None and refusal(parent) is not None
    other = type(me)(pid=999999, pgid=999999, ppid=1, title="x", state="S", sid=999999, uid=os.getuid() + 1)
    assert refusal(other) == "another user's process"
    assert refusal(type(me)(pid=999999, pgid=0, ppid=1, title="x", state="S", sid=5, uid=os.getuid())) is not None


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        ("127.0.0.1", 8000, ("127.0.0.1", 8000)),
        ("::1", 8000, ("::1", 8000)),
        ("localhost", 8000, ("127.0.0.1", 8000)),
        ("no-such-host.invalid", 8000, None),
        ("127.0.0.1", 99999, None),
        ("127.0.0.1", "abc", None),
        ("127.0.0.1", True, None),
        (None, 8000, None),
    ],
)
def test_only_an_address_is_checked_after_stopping(host, port, expected):
    from tqdeploy.runtime.stop import address

    assert address(host, port) == expected
