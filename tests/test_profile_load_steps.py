"""A load step's figures: --warmup's untimed load before each step, against a real HTTP server on loopback
(tests/support/loopback_http.py) that streams at a fixed pace (the warm-up's requests reach the server, its figures
stay out of the step's), and what a step counts as its tokens."""

from __future__ import annotations

import json
import subprocess
import sys

from support.loopback_http import METRICS, MODELS, Reply, fixed, serving

EVENT = f"data: {json.dumps({'choices': [{'text': 'a', 'token_ids': [5]}]})}\n\n".encode()
DONE = b"data: [DONE]\n\n"


def _vllm(tokens: int, pace_s: float) -> dict:
    stream = lambda _h: Reply(200, chunks=[(pace_s, EVENT)] * tokens + [(0.0, DONE)])  # noqa: E731
    return {"/metrics": fixed(200, METRICS), "/v1/models": fixed(200, MODELS), "/v1/completions": stream}


def _profile(url: str, out, *extra: str) -> dict:
    cmd = [sys.executable, "-m", "tqdeploy", "profile", "--url", url, "--load", "--concurrency", "1,2"]
    cmd += ["--requests", "3", "--output-tokens", "4", "--no-chart", "--json", "--out", str(out), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_warmup_requests_reach_the_server_and_stay_out_of_the_step(tmp_path):
    with serving(_vllm(4, 0.02)) as srv:
        data = _profile(srv.base_url, tmp_path / "warm", "--warmup", "0.5")
        sent = len([s for s in srv.seen if s.path == "/v1/completions"])
    steps = data["load"]["steps"]
    assert data["load"]["spec"]["warmup_s"] == 0.5
    for step in steps:
        warm = step["warmup"]
        assert warm["requests"] >= 1 and warm["errors"] == 0 and warm["seconds"] < 2.0, warm
        assert step["requests"] == 3 and step["output_tokens"] == 3 * 4, step  # the timed step alone
    assert sent == sum(s["requests"] + s["warmup"]["requests"] for s in steps)


def test_without_warmup_no_request_is_sent_outside_the_steps(tmp_path):
    with serving(_vllm(4, 0.0)) as srv:
        data = _profile(srv.base_url, tmp_path / "cold")
        sent = len([s for s in srv.seen if s.path == "/v1/completions"])
    assert all("warmup" not in s for s in data["load"]["steps"]) and data["load"]["spec"]["warmup_s"] == 0.0
    assert sent == 2 * 3


def test_warmup_is_bounded(tmp_path):
    for value in ("-1", "nan", "601"):
        cmd = [sys.executable, "-m", "tqdeploy", "profile", "--url", "http://127.0.0.1:1", "--load"]
        proc = subprocess.run([*cmd, "--warmup", value, "--out", str(tmp_path)], capture_output=True, text=True,
                              timeout=30)  # fmt: skip
        assert proc.returncode == 2 and f"--warmup {value}" in proc.stdout + proc.stderr, proc.stderr


def test_a_step_counts_every_token_that_arrived_failed_streams_included():
    from tqdeploy.profile.load import summarize_step

    done = {"sent": 0.0, "arrivals": [0.1, 0.2], "tokens": 2, "error": None, "cut": False}
    cut = {"sent": 0.0, "arrivals": [0.1], "tokens": 1, "error": None, "cut": True}
    failed = {"sent": 0.0, "arrivals": [0.1, 0.2, 0.3], "tokens": 3, "error": "TimeoutError: timed out", "cut": False}
    step = summarize_step([done, cut, failed], concurrency=3, elapsed=2.0)
    assert (step["completed"], step["cut_at_duration"], step["errors"]) == (1, 1, 1)
    assert step["output_tokens"] == 6 and step["output_tokens_per_s"] == 3.0
    assert step["ttft_p50_s"] == 0.1  # latency figures stay those of completed streams
