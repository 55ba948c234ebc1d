"""`tqdeploy profile` as a command: saved logs, bad input (one line, exit 2), the JSON contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LOGS = Path(__file__).parent / "fixtures" / "vllm-logs"


def test_log_mode_writes_json_and_png(run_cli, tmp_path):
    out = tmp_path / "p"
    code, stdout, _ = run_cli(
        "profile", "--log", str(LOGS / "h200-vllm-0.25.0" / "dense-tq.log"), "--out", str(out), "--json"
    )
    assert code == 0
    data = json.loads(stdout)
    assert data["schema"] == "tqdeploy.profile/1" and data["start"] == "log"
    assert {"start", "wall_seconds", "phases", "attributed_fraction", "kv", "load", "findings"} <= set(data)
    assert data["kv"]["cache_dtype"] == "turboquant_4bit_nc" and data["kv"]["real_tokens"] == 26001408
    assert data["load"] is None
    assert {p["name"] for p in data["phases"]} >= {"CUDA graph capture", "torch.compile", "weights loaded"}
    assert all(set(p) == {"name", "start_s", "seconds", "source"} for p in data["phases"])
    assert any("process start" in u for u in data["untimed"])
    assert json.loads((out / "profile.json").read_text()) == data
    assert (out / "profile.png").read_bytes()[:4] == b"\x89PNG"


def test_log_mode_terminal_summary(run_cli, tmp_path):
    log = LOGS / "cpu-vllm-0.32.0" / "tiny-warm.log"
    code, stdout, _ = run_cli("profile", "--log", str(log), "--out", str(tmp_path), "--no-chart")
    assert code == 0
    assert "start-up timeline" in stdout and "torch.compile cache: load-failed" in stdout
    assert "cannot time: first /health 200" in stdout
    assert not (tmp_path / "profile.png").exists()


@pytest.mark.parametrize(
    "args,needle",
    [
        ((), "nothing to profile"),
        (("--log", "/nonexistent/server.log"), "--log /nonexistent/server.log"),
        (("--url", "http://10.0.0.5:8000"), "not a loopback address"),
        (("--url", "http://127.0.0.1:1", "--load", "--concurrency", "0,2"), "--concurrency"),
        (("--url", "http://127.0.0.1:1", "--load", "--requests", "0"), "--requests 0"),
        (("--url", "http://127.0.0.1:1", "--load", "--sample-interval", "0"), "--sample-interval 0.0"),
        (("--log", str(LOGS / "cpu-vllm-0.32.0" / "tiny-cold.log"), "--start", "hot"), "--start 'hot'"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, needle, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "tqdeploy", "profile", *args, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and "Traceback" not in proc.stderr


def test_help_does_not_import_matplotlib():
    code = "import sys, tqdeploy.cli, tqdeploy.commands.profile; print('matplotlib' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False"


def test_unreachable_server_is_one_line(tmp_path):
    from support.vllm_server import free_port

    url = f"http://127.0.0.1:{free_port()}"
    proc = subprocess.run(
        [sys.executable, "-m", "tqdeploy", "profile", "--url", url, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and f"--url {url}: cannot read /metrics" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_every_profile_finding_id_has_a_doc_page(run_cli):
    import re

    source = "".join(p.read_text() for p in (Path(__file__).parents[1] / "tool" / "tqdeploy" / "profile").glob("*.py"))
    found = sorted(set(re.findall(r'"(TQ4[34]\d)"', source)))
    assert found == ["TQ430", "TQ431", "TQ432", "TQ433", "TQ434", "TQ435", "TQ436", "TQ437", "TQ438", "TQ440"]
    for fid in found:
        code, out, _ = run_cli("explain", fid)
        assert code == 0 and out.startswith(f"# {fid}:") and "## Fix" in out


def test_cold_start_refuses_an_operator_set_cache_root(tmp_path):
    build = tmp_path / "b"
    (build / ".tqdeploy" / "cache" / "vllm").mkdir(parents=True)
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "tqdeploy", "profile", str(build), "--start", "cold"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "VLLM_CACHE_ROOT": str(shared)},
    )
    assert proc.returncode == 2 and "VLLM_CACHE_ROOT is set" in proc.stderr, proc.stderr
    assert shared.is_dir() and (build / ".tqdeploy" / "cache" / "vllm").is_dir()  # nothing removed


def test_a_failed_up_is_named_in_one_line(tmp_path):
    empty = tmp_path / "not-a-build"
    empty.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "tqdeploy", "profile", str(empty), "--start", "warm"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and f"tqdeploy up {empty} failed" in proc.stderr, proc.stderr
    assert "tqdeploy build" in proc.stderr and "Traceback" not in proc.stderr


def test_load_steps_with_too_few_scrapes_are_flagged():
    from tqdeploy.profile.run import load_findings

    def load(samples: list[int]) -> dict:
        steps = [
            {"concurrency": c, "seconds": 0.9, "samples": n, "errors": 0} for c, n in zip((1, 8), samples, strict=True)
        ]
        return {"spec": {"sample_interval_s": 1.0}, "steps": steps, "server": {"preemptions": 0}}

    (finding,) = load_findings(load([5, 1]))  # the 8-way step saw one scrape: the H200 run's case
    assert finding.id == "TQ438" and finding.evidence["steps"] == [{"concurrency": 8, "seconds": 0.9, "samples": 1}]
    assert "--sample-interval (now 1 s)" in finding.remediation
    assert load_findings(load([3, 4])) == []


def test_a_log_whose_engine_died_is_a_failed_start_exit_1(run_cli, tmp_path):
    # the hybrid TurboQuant crash on the H200 (vLLM 0.25.0): the engine died after the KV cache was sized
    log = LOGS / "h200-vllm-0.25.0" / "q36like-tq-hybrid-crash.log"
    code, stdout, _ = run_cli("profile", "--log", str(log), "--out", str(tmp_path), "--no-chart", "--json")
    data = json.loads(stdout)
    assert code == 1 and data["context"]["start_failed"] is True
    errors = [f for f in data["findings"] if f["severity"] == "error"]
    # the same finding `up` gives for this log (runtime/classify.py), named as a failed start
    from tqdeploy.runtime.classify import StartContext, classify_log
    from tqdeploy.runtime.logstamp import split

    lines = [split(line)[1] for line in log.read_text().splitlines()]
    expected = classify_log(lines, StartContext(build_dir="BUILD"))
    assert expected is not None and [f["id"] for f in errors] == [expected.id] == ["TQ406"]
    assert errors[0]["title"] == f"the start failed: {expected.title}"
    assert "Unknown TurboQuant cache dtype" in errors[0]["evidence"]["line"]
    code, stdout, _ = run_cli("profile", "--log", str(log), "--out", str(tmp_path), "--no-chart")
    assert code == 1 and "the start failed" in stdout


def test_a_start_that_came_up_is_no_failed_start(run_cli, tmp_path):
    for log in (LOGS / "cpu-vllm-0.32.0" / "tiny-cold.log", LOGS / "h200-vllm-0.25.0" / "dense-tq.log"):
        code, stdout, _ = run_cli("profile", "--log", str(log), "--out", str(tmp_path), "--no-chart", "--json")
        data = json.loads(stdout)
        assert code == 0 and data["context"]["start_failed"] is False, data["findings"]


def test_a_clock_that_goes_backwards_is_TQ440(run_cli, tmp_path):
    from tqdeploy.runtime.logstamp import stamp

    lines = (LOGS / "cpu-vllm-0.32.0" / "tiny-cold.log").read_text().splitlines()
    forward = tmp_path / "forward.log"
    forward.write_text("".join(stamp(line, 1_764_000_000.0 + i * 0.5) + "\n" for i, line in enumerate(lines)))
    backward = tmp_path / "backward.log"  # the same lines, each stamped earlier than the one before
    backward.write_text("".join(stamp(line, 1_764_009_000.0 - i * 0.5) + "\n" for i, line in enumerate(lines)))
    code, stdout, _ = run_cli("profile", "--log", str(forward), "--out", str(tmp_path), "--no-chart", "--json")
    assert code == 0 and "TQ440" not in {f["id"] for f in json.loads(stdout)["findings"]}
    assert json.loads(stdout)["clock_backwards"] == []
    code, stdout, _ = run_cli("profile", "--log", str(backward), "--out", str(tmp_path), "--no-chart", "--json")
    data = json.loads(stdout)
    found = {f["id"]: f for f in data["findings"]}
    assert "TQ440" in found and found["TQ440"]["severity"] == "warn", data["findings"]
    assert data["clock_backwards"] and all(s["seconds_back"] > 0 for s in data["clock_backwards"])
    assert found["TQ440"]["evidence"]["steps"][0]["line"] >= 1
