"""TQ426: two vLLM servers starting on one GPU at once. The failed-start classifier reads vLLM's memory-profiling
assertion; `up`'s pre-flight warns when a vLLM process on the build's GPU started recently. NVML is faked at its
adapter boundary (this host has no GPU); the processes it names are real ones on this host."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from support.specs import spec_with
from tqdeploy.findings import Severity
from tqdeploy.runtime.classify import StartContext, classify_exit
from tqdeploy.vllmfacts import logpatterns as L

# The tail of a failed start as vLLM 0.25.0 prints it on the H200 (log prefix, traceback, the assertion of
# v1/worker/gpu_worker.py line 511); the two figures stand for the X and Y of the recorded message.
FAILED_START = """\
(EngineCore pid=41873) INFO 12-04 14:02:11 [gpu_model_runner.py:5306] Model loading took 0.27 GiB memory and 1.912 seconds
(EngineCore pid=41873) ERROR 12-04 14:02:19 [core.py:1195] EngineCore failed to start.
(EngineCore pid=41873) ERROR 12-04 14:02:19 [core.py:1195] Traceback (most recent call last):
(EngineCore pid=41873) ERROR 12-04 14:02:19 [core.py:1195]   File "vllm/v1/worker/gpu_worker.py", line 510, in determine_available_memory
(EngineCore pid=41873) ERROR 12-04 14:02:19 [core.py:1195]     assert self.init_snapshot.free_memory >= free_gpu_memory, (
(EngineCore pid=41873) ERROR 12-04 14:02:19 [core.py:1195] AssertionError: Error in memory profiling. Initial free memory 121.4 GiB, current free memory 123.83 GiB. This happens when other processes sharing the same container release GPU memory while vLLM is profiling during initialization. To fix this, ensure consistent GPU memory allocation or isolate vLLM in its own container.
(EngineCore pid=41873) ERROR 12-04 14:02:19 [core.py:1195] Engine core initialization failed. See root cause above.
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""  # noqa: E501


def test_the_classifier_names_two_starts_on_one_gpu():
    finding = classify_exit(FAILED_START.splitlines(), 1, StartContext(build_dir="b"))
    assert finding.id == "TQ426" and finding.severity == Severity.ERROR
    assert finding.evidence["initial_free_gib"] == 121.4 and finding.evidence["current_free_gib"] == 123.83
    assert finding.evidence["exit_code"] == 1 and "one at a time" in finding.remediation
    # without the assertion the same start is only "the engine died" (TQ407)
    other = [line for line in FAILED_START.splitlines() if "Error in memory profiling" not in line]
    assert classify_exit(other, 1, StartContext(build_dir="b")).id == "TQ407"


def test_the_pattern_matches_the_message_as_the_installed_vllm_formats_it():
    """vLLM 0.32.0's own assertion message (the CPU venv's source), evaluated as vLLM evaluates it."""
    from test_vllmfacts_logpatterns import _installed_source

    source = _installed_source("v1/worker/gpu_worker.py")
    m = re.search(r"assert init_free_memory >= free_gpu_memory, (\(\n.*?\n\s*\))\n", source, re.S)
    assert m, "the assertion moved in vllm/v1/worker/gpu_worker.py"
    message = eval(
        m.group(1),
        {"format_gib": lambda b: round(b / (1 << 30), 2), "init_free_memory": 5 << 30, "free_gpu_memory": 6 << 30},
    )  # noqa: E501, S307
    found = L.MEMORY_PROFILING_RACE.search(message)
    assert found and found.groups() == ("5.0", "6.0")


@pytest.fixture
def vllm_titled_process():
    """A real process titled as vLLM's engine core (argv[0] and comm, as setproctitle leaves them)."""
    code = "import ctypes, time; ctypes.CDLL(None).prctl(15, b'VLLM::EngineCor', 0, 0, 0); time.sleep(120)"
    proc = subprocess.Popen(
        ["bash", "-c", f'exec -a VLLM::EngineCore {sys.executable} -c "{code}"'], start_new_session=True
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until prctl has run (comm changed)
            with open(f"/proc/{proc.pid}/comm") as comm:
                if comm.read().startswith("VLLM::"):
                    break
            time.sleep(0.05)
        yield proc.pid
    finally:
        os.killpg(proc.pid, 9)
        proc.wait(timeout=10)


class Dep:
    variant = "gpu"
    spec = spec_with(gpu_memory_utilization=0.1, tensor_parallel_size=1, gpus=(0,))


def _nvml(monkeypatch, procs):
    from support.doctor_nvml import FakeNVML, h200_like
    from tqdeploy.probe import nvml

    gib = 1 << 30
    gpus = [h200_like(memory=(140 * gib, 30 * gib), procs=procs), h200_like(memory=(140 * gib, 0), procs=[])]
    monkeypatch.setattr(nvml, "load_adapter", lambda: FakeNVML(gpus))


def test_preflight_warns_when_a_vllm_on_the_build_s_gpu_started_recently(monkeypatch, vllm_titled_process):
    from tqdeploy.runtime import preflight

    _nvml(monkeypatch, [(vllm_titled_process, 12 << 30)])
    [race] = [f for f in preflight.gpu_findings(Dep()) if f.id == "TQ426"]  # type: ignore[arg-type]
    assert race.severity == Severity.WARN and "GPU 0" in race.title
    [n] = race.evidence["neighbours"]
    assert n["pid"] == vllm_titled_process and n["title"] == "VLLM::EngineCore" and 0 <= n["age_s"] < 60


def test_preflight_leaves_other_gpus_old_starts_and_other_programs_alone(monkeypatch, vllm_titled_process):
    from tqdeploy.runtime import gpu, preflight, startrace

    _nvml(monkeypatch, [(vllm_titled_process, 12 << 30)])
    gpus = gpu.gpu_memory()
    assert startrace.starting_neighbours(gpus, [1], set()) == []  # the build uses GPU 1 only
    later = time.time() + startrace.STARTING_WINDOW_S + 1  # the same process, past vLLM's engine start timeout
    assert startrace.starting_neighbours(gpus, [0], set(), now=later) == []
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:  # a young process that is not vLLM's
        _nvml(monkeypatch, [(sleeper.pid, 1 << 30)])
        assert not [f for f in preflight.gpu_findings(Dep()) if f.id == "TQ426"]  # type: ignore[arg-type]
    finally:
        os.killpg(sleeper.pid, 9)
        sleeper.wait(timeout=10)


def test_a_vllm_command_line_counts_without_a_title(monkeypatch):
    """setproctitle is optional in vLLM (utils/system_utils.py): without it a `vllm serve` keeps its command line."""
    from tqdeploy.runtime import gpu, startrace

    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "vllm", "serve", "m"], start_new_session=True
    )
    try:
        _nvml(monkeypatch, [(proc.pid, 1 << 30)])
        [n] = startrace.starting_neighbours(gpu.gpu_memory(), [0], set())
        assert n["pid"] == proc.pid and "vllm" in n["title"]
    finally:
        os.killpg(proc.pid, 9)
        proc.wait(timeout=10)
