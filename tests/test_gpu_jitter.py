"""scripts/gpu/records/jitter.py: the host's own window-to-window spread (the CUDA workloads run on the H200; the CPU
one runs here for real)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "records" / "jitter.py"
sys.path.insert(0, str(SCRIPT.parent))

import jitter  # noqa: E402


def test_spread_worked_by_hand():
    s = jitter.spread([90.0, 100.0, 110.0])
    assert (s["mean"], s["cv"], s["range"]) == (100.0, 0.1, round(110 / 90, 4))  # stdev 10 over mean 100


def test_a_cpu_only_run_times_every_window(tmp_path):
    out = tmp_path / "jitter.json"
    res = subprocess.run([sys.executable, str(SCRIPT), "--kinds", "cpu", "--windows", "3", "--seconds", "0.1",
                          "--out", str(out)], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert res.returncode == 0, res.stderr
    data = json.loads(out.read_text())
    assert data == json.loads(res.stdout) and data["schema"] == "tqdeploy.gpu-jitter/1"
    cpu = data["kinds"]["cpu"]
    assert list(data["kinds"]) == ["cpu"] and len(cpu["per_s"]) == 3 and all(v > 0 for v in cpu["per_s"])
    assert cpu["cv"] >= 0 and cpu["range"] >= 1


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--kinds", "cpu,disk"], "--kinds 'cpu,disk' is not a list of cpu, launch, gemv"),
        (["--kinds", "cpu,cpu"], "--kinds 'cpu,cpu'"),
        (["--windows", "1"], "--windows 1 is outside 2..100"),
        (["--seconds", "0"], "--seconds 0.0 is outside"),
    ],
)
def test_bad_input_is_one_line_naming_it(args, named):
    res = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and named in res.stderr and "Traceback" not in res.stderr, res.stderr
