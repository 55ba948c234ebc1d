"""REPO@REV: config.json and safetensors headers over HTTP from a loopback Hub mirror; no weights fetched."""

import json
from pathlib import Path

import pytest

from support.hubmirror import HubMirror, Repo, write_safetensors
from support.tty import run_on_a_tty
from tqdeploy.errors import TQError
from tqdeploy.model import load_model_facts

MODELS = Path(__file__).parent / "fixtures" / "models"
SHARDS = (300_000, 200_000)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Repo:
    root = tmp_path_factory.mktemp("hubrepo")
    names = [f"model-{i + 1:05d}-of-00002.safetensors" for i in range(2)]
    for i, (name, size) in enumerate(zip(names, SHARDS, strict=True)):
        write_safetensors(root / name, size, seed=i)
    (root / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": sum(SHARDS)}, "weight_map": {f"w{i}": n for i, n in enumerate(names)}})
    )
    (root / "config.json").write_text((MODELS / "llama-3.1-8b" / "config.json").read_text())
    return Repo("acme/llama-like", root)


@pytest.fixture(autouse=True)
def _hub_env(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    for var in ("HF_HUB_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)


def test_repo_at_rev_reads_config_and_headers_only(repo, monkeypatch):
    with HubMirror(repo) as m:
        monkeypatch.setenv("HF_ENDPOINT", m.url)
        facts = load_model_facts("acme/llama-like@v1.0")
        ranges = [r for r in m.requests if r["path"].startswith("/cdn/") and r["method"] == "GET"]
    assert facts.num_hidden_layers == 32 and facts.source == "acme/llama-like@v1.0"
    assert facts.weight_bytes == sum(SHARDS) and facts.weight_bytes_by_dtype == {"U8": sum(SHARDS)}
    assert facts.weight_source == "hub metadata"
    assert ranges and all(r["range"] for r in ranges)  # header reads are range requests, never whole shards


def test_wrong_revision_and_repo_are_clear(repo, monkeypatch):
    with HubMirror(repo) as m:
        monkeypatch.setenv("HF_ENDPOINT", m.url)
        with pytest.raises(TQError, match="revision 'nope' of acme/llama-like does not exist"):
            load_model_facts("acme/llama-like@nope")
        with pytest.raises(TQError, match="acme/other is not accessible"):
            load_model_facts("acme/other@v1.0")


def test_unreachable_mirror_is_one_line_with_a_fix(monkeypatch):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(TQError, match="unreachable") as exc:
        load_model_facts("acme/llama-like@v1.0")
    assert "HF_ENDPOINT" in exc.value.remediation


def test_offline_mode_says_so(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(TQError, match="cannot fetch acme/llama-like@v1.0"):
        load_model_facts("acme/llama-like@v1.0")


@pytest.mark.parametrize("bad", ["acme/model", "not a repo@v1", "a@b@c"])
def test_malformed_sources(bad):
    with pytest.raises(TQError):
        load_model_facts(bad)


def test_plan_takes_repo_at_rev(repo, monkeypatch, run_cli):
    with HubMirror(repo) as m:
        monkeypatch.setenv("HF_ENDPOINT", m.url)
        code, out, err = run_cli(
            "plan", "--model", "acme/llama-like@v1.0", "--gpu", "H200", "--max-model-len", "8192", "--json"
        )
        assert code == 0, err
        plan = json.loads(out)
        assert plan["model"]["source"] == "acme/llama-like@v1.0" and plan["model"]["weight_source"] == "hub metadata"
        assert plan["budget"]["weights_bytes"] == sum(SHARDS)  # exact, from the headers over HTTP
        code, out, err = run_cli("plan", "--model", "acme/llama-like@nope", "--gpu", "H200")
        assert code == 2 and "revision 'nope'" in err and out == ""


def test_plan_json_from_the_hub_draws_no_progress_bar_on_a_terminal(repo, monkeypatch, tqdeploy_exe):
    # huggingface_hub draws a tqdm bar on stderr for the config.json download unless bars are disabled
    # (model/hub.py); `plan --json` on a terminal must show nothing but its own output.
    with HubMirror(repo) as m:
        monkeypatch.setenv("HF_ENDPOINT", m.url)
        cmd = [tqdeploy_exe, "plan", "--model", "acme/llama-like@v1.0", "--gpu", "H200", "--max-model-len", "8192"]
        code, shown = run_on_a_tty([*cmd, "--json"])
    assert code == 0, shown
    # without the fix the bar (huggingface_hub 2.4) is drawn and cleared, leaving blank lines on the terminal
    assert shown == "", repr(shown)
