"""`tqdeploy connect` settings, from real build directories (no server needed)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tqdeploy.resources import data_dir

SENTINEL_KEY = "sk-sentinel-never-printed-4242"


@pytest.fixture(scope="module")
def qwen_build(tmp_path_factory):
    """The embedded Qwen3.6 spec built for real: served name qwen3.6-27b, key file ./secrets/vllm-api-key."""
    from tqdeploy.cli import main

    out = tmp_path_factory.mktemp("qwen-build")
    assert main(["build", "--embedded", "qwen36-27b-tq", "--out", str(out)]) == 0
    (out / "secrets").mkdir(exist_ok=True)  # build created it with a random key
    (out / "secrets" / "vllm-api-key").write_text(SENTINEL_KEY + "\n")
    return out


def _json(run_cli, *args):
    code, out, err = run_cli("connect", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_claude_code_settings_are_the_real_keys_and_hold_no_key(run_cli, qwen_build):
    code, text_out, _ = run_cli("connect", "claude-code", str(qwen_build))
    assert code == 0
    data = _json(run_cli, "claude-code", str(qwen_build))
    settings = data["settings"]["settings_json"]
    key_file = (qwen_build / "secrets" / "vllm-api-key").resolve()
    assert settings["env"] == {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:8000",  # host only: Claude Code appends /v1/messages
        "ANTHROPIC_DEFAULT_OPUS_MODEL": "qwen3.6-27b",
        "ANTHROPIC_DEFAULT_SONNET_MODEL": "qwen3.6-27b",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "qwen3.6-27b",
        "CLAUDE_CODE_ATTRIBUTION_HEADER": "0",
    }
    assert settings["apiKeyHelper"] == f"cat {key_file}"
    assert set(settings) == {"env", "apiKeyHelper"}
    # The helper is a /bin/sh command: run it as Claude Code would, it prints the key.
    helper = subprocess.run(["/bin/sh", "-c", settings["apiKeyHelper"]], capture_output=True, text=True, check=True)
    assert helper.stdout.strip() == SENTINEL_KEY
    assert SENTINEL_KEY not in text_out and SENTINEL_KEY not in json.dumps(data)
    assert "settings.json" in text_out and '"apiKeyHelper"' in text_out


def test_a_served_name_with_a_slash_is_refused_for_claude_code(run_cli, qwen_build):
    code, out, err = run_cli("connect", "claude-code", str(qwen_build), "--served-model-name", "Qwen/Qwen3.6-27B")
    assert code == 2 and out == ""
    assert "'Qwen/Qwen3.6-27B' contains '/'" in err and "fix: set model.served_name" in err
    assert "Traceback" not in err
    # The OpenAI SDKs take such a name: only Claude Code refuses it.
    assert run_cli("connect", "openai", str(qwen_build), "--served-model-name", "Qwen/Qwen3.6-27B")[0] == 0


@pytest.mark.parametrize("given", ["http://10.0.0.5:8000", "http://10.0.0.5:8000/", "http://10.0.0.5:8000/v1/"])
def test_base_url_is_normalized_for_each_client(run_cli, qwen_build, given):
    claude = _json(run_cli, "claude-code", str(qwen_build), "--base-url", given)
    assert claude["settings"]["settings_json"]["env"]["ANTHROPIC_BASE_URL"] == "http://10.0.0.5:8000"
    openai = _json(run_cli, "openai", str(qwen_build), "--base-url", given)
    assert openai["settings"]["base_url"] == "http://10.0.0.5:8000/v1"
    assert openai["endpoint"]["source"] == "--base-url"


def test_openai_settings_read_the_key_file_and_never_embed_the_key(run_cli, qwen_build):
    data = _json(run_cli, "openai", str(qwen_build))
    s = data["settings"]
    assert s["base_url"] == "http://127.0.0.1:8000/v1" and s["model"] == "qwen3.6-27b"
    key_file = str((qwen_build / "secrets" / "vllm-api-key").resolve())
    assert f"open({key_file!r}).read().strip()" in s["python"]
    assert f"$(cat {key_file})" in s["curl"]
    assert SENTINEL_KEY not in json.dumps(data)


def test_comfyui_warns_that_loopback_is_unreachable_from_another_machine(run_cli, qwen_build):
    local = _json(run_cli, "comfyui", str(qwen_build))
    party = local["settings"]["node_packs"]["heshengtao/comfyui_LLM_party: LLM_api_loader"]
    assert party["base_url"] == "http://127.0.0.1:8000/v1" and party["model_name"] == "qwen3.6-27b"
    assert SENTINEL_KEY not in json.dumps(local)
    assert any("reachable only from this machine" in n for n in local["notes"])
    remote = _json(run_cli, "comfyui", str(qwen_build), "--base-url", "http://10.0.0.5:8000")
    assert not any("reachable only" in n for n in remote["notes"])


def test_the_run_state_of_up_wins_over_the_spec(run_cli, tmp_path):
    assert run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(tmp_path))[0] == 0
    assert _json(run_cli, "openai", str(tmp_path))["settings"]["base_url"] == "http://127.0.0.1:8000/v1"
    (tmp_path / ".tqdeploy").mkdir()
    state = {
        "schema": "tqdeploy.state/1",
        "base_url": "http://127.0.0.1:18000",
        "served_model_name": "tiny",
        "api_key_file": "keys/k",
    }
    (tmp_path / ".tqdeploy" / "state.json").write_text(json.dumps(state))
    data = _json(run_cli, "openai", str(tmp_path))
    assert data["endpoint"]["source"] == "state"
    assert data["settings"]["base_url"] == "http://127.0.0.1:18000/v1"
    assert data["endpoint"]["api_key_file"] == str((tmp_path / "keys" / "k").resolve())


def test_the_state_written_by_ups_own_writer_is_read(run_cli, tmp_path):
    from tqdeploy.runtime import state

    assert run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(tmp_path))[0] == 0
    key = tmp_path / "key"
    state.new_state(tmp_path, base_url="http://127.0.0.1:18001", served_model_name="tiny", api_key_file=str(key))
    data = _json(run_cli, "claude-code", str(tmp_path))
    assert data["endpoint"]["source"] == "state"
    assert data["settings"]["settings_json"]["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:18001"
    assert data["settings"]["settings_json"]["apiKeyHelper"] == f"cat {key.resolve()}"


def test_bad_inputs_are_one_line_errors(run_cli, tmp_path):
    code, _, err = run_cli("connect", "cursor", str(tmp_path))
    assert code == 2 and "unknown client 'cursor'" in err and "openai, claude-code, comfyui" in err
    code, _, err = run_cli("connect", "openai", str(tmp_path))
    assert code == 2 and "holds no tqdeploy.toml" in err
    code, _, err = run_cli("connect", "openai", str(tmp_path / "nope"))
    assert code == 2 and "not found" in err
    code, _, err = run_cli(
        "connect", "openai", str(tmp_path), "--base-url", "http://u:secretpw@h:1", "--served-model-name", "m"
    )
    assert code == 2 and "credentials" in err and "secretpw" not in err
    (tmp_path / ".tqdeploy").mkdir()
    (tmp_path / ".tqdeploy" / "state.json").write_text('{"schema": "other/9"}')
    code, _, err = run_cli("connect", "openai", str(tmp_path))
    assert code == 2 and "not a tqdeploy.state/1 file" in err
    assert "Traceback" not in err


def test_every_connect_finding_id_has_a_doc_page():
    import re
    from pathlib import Path

    import tqdeploy.connect.check as check
    import tqdeploy.net.answers as answers

    ids = set(re.findall(r'"(TQ4[67]\d)"', Path(check.__file__).read_text() + Path(answers.__file__).read_text()))
    assert ids == {f"TQ46{i}" for i in range(10)}  # TQ468/TQ469: net's refused key and bad answer
    for fid in ids:
        page = data_dir("checks") / "docs" / f"{fid}.md"
        assert page.is_file(), fid
        assert "## Fix" in page.read_text()
