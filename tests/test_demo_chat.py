"""scripts/demo_chat.py (the end of `make run`): asks the deployment its questions greedily with a bounded
length, sends the build's key, and prints each question with its answer. The server is a loopback stand-in
that records what reached it; tests/test_demomodel_serve.py shows the real model's answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.loopback_http import Reply, bearer_required, serving

REPO = Path(__file__).resolve().parents[1]
ANSWERS = {"What is the capital of France?": "The capital of France is Paris."}


def _chat(h) -> Reply:
    question = json.loads(h.body)["messages"][0]["content"]
    answer = ANSWERS.get(question, "I do not know.")
    return Reply(200, {"choices": [{"message": {"content": answer}}], "usage": {"completion_tokens": 7}})


def test_asks_each_question_with_the_key_and_prints_it_with_its_answer(run_cli, tmp_path):
    from tqdeploy.runtime import state

    build = tmp_path / "build"
    spec = (REPO / "tool" / "tqdeploy" / "deployspec" / "defaults" / "tiny-cpu-demo.toml").read_text()
    with serving({}) as server:
        (tmp_path / "spec.toml").write_text(spec.replace("port = 8000", f"port = {server.server_address[1]}"))
        assert run_cli("build", str(tmp_path / "spec.toml"), "--out", str(build))[0] == 0
        key = (build / "secrets" / "vllm-api-key").read_text().strip()  # the key `build` created
        server.routes["/v1/chat/completions"] = bearer_required(key, _chat)
        script = [sys.executable, str(REPO / "scripts" / "demo_chat.py"), str(build)]
        before = subprocess.run(script, capture_output=True, text=True, timeout=60)  # `up` has not made it ready
        state.new_state(build, ready=True)
        proc = subprocess.run(script, capture_output=True, text=True, timeout=60)
        bodies = [s for s in server.seen if s.path == "/v1/chat/completions"]
    assert before.returncode == 1 and "is not running: `tqdeploy up" in before.stderr
    assert proc.returncode == 0, proc.stderr
    assert "  Q: What is the capital of France?\n  A: The capital of France is Paris.  (7 tokens" in proc.stdout
    assert proc.stdout.count("  Q: ") == 3 == len(bodies) and key not in proc.stdout + proc.stderr
    assert all(s.headers["Authorization"] == f"Bearer {key}" for s in bodies)


def test_sends_temperature_0_and_a_bounded_length_to_the_served_name():
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import demo_chat
    finally:
        sys.path.remove(str(REPO / "scripts"))
    seen = []
    with serving({"/v1/chat/completions": lambda h: seen.append(json.loads(h.body)) or _chat(h)}) as server:
        import urllib.request

        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        text, tokens, _ = demo_chat.ask(
            opener, server.base_url + "/v1/chat/completions", {}, "smollm2-135m-instruct", "What is 2 + 2?"
        )
    assert (text, tokens) == ("I do not know.", 7)
    assert seen == [
        {
            "model": "smollm2-135m-instruct",
            "messages": [{"role": "user", "content": "What is 2 + 2?"}],
            "temperature": 0,
            "max_tokens": demo_chat.MAX_TOKENS,
        }
    ]
