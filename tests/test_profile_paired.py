"""The interleaved comparison of two servers' tokens/s (tqdeploy.profile.paired, scripts/gpu/paired_load.py):
the order alternates, the interval and verdict follow the per-step ratios, and a real run against two loopback
servers streaming at different paces finds the faster one, with the key sent to both and the steps bounded."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from support.loopback_http import METRICS, MODELS, Reply, fixed, serving
from tqdeploy.profile import paired

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "paired_load.py"
EVENT = f"data: {json.dumps({'choices': [{'text': 'a', 'token_ids': [5]}]})}\n\n".encode()
DONE = b"data: [DONE]\n\n"


def _vllm(pace_s: float, tokens: int = 4) -> dict:
    stream = lambda _h: Reply(200, chunks=[(pace_s, EVENT)] * tokens + [(0.0, DONE)])  # noqa: E731
    return {"/metrics": fixed(200, METRICS), "/v1/models": fixed(200, MODELS), "/v1/completions": stream}


def test_each_side_goes_first_equally_often_at_every_concurrency():
    firsts = {step: [paired.order(r, step)[0] for r in range(4)] for step in range(3)}
    assert all(sorted(f) == [0, 0, 1, 1] for f in firsts.values()), firsts
    assert [paired.order(0, s)[0] for s in range(3)] == [0, 1, 0]


def test_interval_and_verdict_examples():
    geo, low, high = paired.interval([1.0, 1.0, 1.0])
    assert (geo, low, high) == (1.0, 1.0, 1.0) and paired.verdict(low, high, 0.02) == "within"
    geo, low, high = paired.interval([1.30, 0.95, 0.80])  # lease 5's c=8 pairs as whole loads: far too wide
    assert low < 0.98 and high > 1.02 and paired.verdict(low, high, 0.02) == "unresolved"
    geo, low, high = paired.interval([0.90, 0.91, 0.89, 0.90])
    assert math.isclose(geo, 0.9, rel_tol=0.01) and paired.verdict(low, high, 0.02) == "outside"
    # t with 3 degrees of freedom: mean of logs +- 3.182 x sd / 2
    logs = [math.log(r) for r in (1.01, 0.99, 1.00, 1.02)]
    mean, sd = sum(logs) / 4, (sum((x - sum(logs) / 4) ** 2 for x in logs) / 3) ** 0.5
    _, low, high = paired.interval([1.01, 0.99, 1.00, 1.02])
    assert math.isclose(low, math.exp(mean - 3.182 * sd / 2)) and math.isclose(high, math.exp(mean + 3.182 * sd / 2))
    _, low, high = paired.interval([1.1])  # one step: no interval
    assert (low, high) == (0.0, math.inf) and paired.verdict(low, high, 0.02) == "unresolved"


def test_the_summary_shows_each_order_apart():
    steps = [
        {"concurrency": 4, "first": "tq", "ratio": 0.8},
        {"concurrency": 4, "first": "plain", "ratio": 1.25},
        {"concurrency": 4, "first": "tq", "ratio": 0.8},
        {"concurrency": 4, "first": "plain", "ratio": 1.25},
    ]
    summary = paired.summarize(steps, 0.02, "tq")["4"]
    assert summary["by_order"] == {"a_first": 0.8, "b_first": 1.25}  # going second is worth 1.25x on each side
    assert summary["geomean"] == 1.0 and summary["verdict"] == "unresolved"  # balanced: the effect cancels


def _run(a_url: str, b_url: str, out: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(SCRIPT), a_url, b_url, "--out", str(out), "--labels", "fast,slow"]
    cmd += ["--concurrency", "1,2", "--duration", "0.6", "--warmup", "0.1", "--rounds", "2", "--prompt-tokens", "4"]
    cmd += ["--output-tokens", "4", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_a_real_interleaved_run_finds_the_faster_server(tmp_path):
    key = tmp_path / "key"
    key.write_text("sk-paired-test-0123456789\n")
    with serving(_vllm(0.005)) as fast, serving(_vllm(0.05)) as slow:
        proc = _run(fast.base_url, slow.base_url, tmp_path / "ab.json", "--api-key-file", str(key))
        seen = [s for srv in (fast, slow) for s in srv.seen if s.path == "/v1/completions"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "ab.json").read_text())
    assert len(data["steps"]) == 2 * 2 and [s["first"] for s in data["steps"]] == ["fast", "slow", "slow", "fast"]
    for conc in ("1", "2"):
        summary = data["by_concurrency"][conc]
        assert len(summary["ratios"]) == 2 and summary["geomean"] > 2, summary  # ~10x faster per token
    assert all(s["fast"]["seconds"] < 5 and s["slow"]["seconds"] < 5 for s in data["steps"])  # bounded by --duration
    assert seen and all(s.headers.get("Authorization") == "Bearer sk-paired-test-0123456789" for s in seen)
    assert "sk-paired" not in proc.stdout + proc.stderr + (tmp_path / "ab.json").read_text()
    assert "concurrency 1: fast/slow" in proc.stdout


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (("--rounds", "0"), "--rounds 0"),
        (("--rounds", "3"), "--rounds 3 is odd"),
        (("--labels", "a,a"), "--labels"),
        (("--tolerance", "2"), "--tolerance 2"),
    ],
)
def test_bad_input_is_one_line_naming_it(tmp_path, extra, named):
    with serving(_vllm(0.0)) as srv:
        proc = _run(srv.base_url, srv.base_url, tmp_path / "ab.json", *extra)
    assert proc.returncode == 2 and named in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_server_elsewhere_than_loopback_is_refused(tmp_path):
    proc = _run("http://192.0.2.1:8000", "http://127.0.0.1:1", tmp_path / "ab.json")
    assert proc.returncode == 2 and "not a loopback address" in proc.stderr, proc.stderr
