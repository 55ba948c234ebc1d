"""Hostile and odd servers against every HTTP client of tqdeploy (connect, profile, status, up's drain): real
HTTP servers on loopback (tests/support/loopback_http.py) that redirect to another origin, echo the request's
headers, answer too much or the wrong shape, or stall mid-stream. What must hold: the key reaches only the
deployment's own origin, never shows in output, a URL's password never shows, a bad answer is a finding or a
one-line error (never exit 3), and every request ends in bounded time."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time

import pytest

from support.loopback_http import (
    METRICS,
    MODELS,
    Reply,
    bearer_required,
    echo_headers,
    fixed,
    redirect,
    serving,
    sse,
    stalled_stream,
)
from tqdeploy.net import Client, check_url, redact_url

KEY = "sk-hostile-" + secrets.token_hex(12)
PASSWORD = "pw-" + secrets.token_hex(6)
CLI_LIMIT_S = 60


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "vllm-api-key"
    path.write_text(KEY + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def build(tmp_path, run_cli):
    out = tmp_path / "build"
    assert run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out))[0] == 0
    return out


def tq(*args: str, timeout: float = CLI_LIMIT_S) -> tuple[int, str, float]:
    """The real CLI in a subprocess with a deadline: (exit code, stdout + stderr, seconds)."""
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "tqdeploy", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - t0


def never_leaked(text: str) -> None:
    assert KEY not in text and PASSWORD not in text
    assert "Traceback" not in text and "internal error" not in text


# ---- the client itself ----


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://127.0.0.1/x",
        "gopher://127.0.0.1:70/",
        "http://",
        "http://[::1",
        "http://127.0.0.1:99999",
        "http://127.0.0.1:abc",
        "http://127.0.0.1:0",
        "127.0.0.1:8000",
        "http://127.0.0.1:8000/\nHost: evil",
    ],
)
def test_only_http_urls_with_a_host_and_port_are_accepted(url):
    from tqdeploy.errors import TQError

    with pytest.raises(TQError) as err:
        check_url(url, "--url")
    assert err.value.message.startswith("--url ") and "\n" not in err.value.message
    assert err.value.remediation


def test_a_url_is_shown_without_its_user_password_or_secret_query_values():
    assert redact_url(f"http://admin:{PASSWORD}@127.0.0.1:8000/v1") == "http://***@127.0.0.1:8000/v1"
    shown = redact_url(f"http://h:1/x?api_key={PASSWORD}&model=tiny")
    assert PASSWORD not in shown and "model=tiny" in shown
    assert PASSWORD not in redact_url(f"http://u:{PASSWORD}@[::1")  # not even parseable: still redacted


def test_a_redirect_to_another_origin_is_not_followed_and_gets_no_key():
    with serving({"*": fixed(200, MODELS)}) as other:
        with serving({"/v1/models": redirect(other.base_url + "/v1/models")}) as first:
            answer = Client(first.base_url, KEY).get("/v1/models")
    assert answer.status == 302 and "another origin" in answer.error and not answer.ok
    assert other.seen == []  # not even asked
    assert first.authorizations() == [f"Bearer {KEY}"]


def test_a_same_origin_redirect_is_followed_with_the_key_but_not_forever():
    routes = {"/v1/models": redirect("/real/models"), "/real/models": fixed(200, MODELS), "/loop": redirect("/loop")}
    with serving(routes) as srv:
        client = Client(srv.base_url, KEY)
        ok = client.get("/v1/models")
        loop = client.get("/loop")
    assert ok.ok and ok.json() == MODELS
    assert loop.status == 302 and not loop.ok
    assert len([s for s in srv.seen if s.path == "/loop"]) <= 4  # the first request and at most 3 redirects
    assert set(srv.authorizations()) == {f"Bearer {KEY}"}


def test_an_echoed_key_is_replaced_and_answers_are_bounded_in_size_and_time():
    huge = "x" * (5 << 20)
    cut = "x" * ((1 << 20) - 10) + KEY + " and more"  # the size limit falls inside an echoed key
    routes = {"/echo": echo_headers, "/huge": fixed(200, huge), "/cut": fixed(200, cut)}
    routes["/stall"] = stalled_stream({"choices": []})
    with serving(routes) as srv:
        client = Client(srv.base_url, KEY)
        echo = client.get("/echo")
        big = client.get("/huge", limit=1 << 20)
        halfway = client.get("/cut", limit=1 << 20)
        t0 = time.monotonic()
        with client.stream("/stall", {"x": 1}, deadline=time.monotonic() + 1.5) as st:
            lines = list(st.lines())
        stalled_s = time.monotonic() - t0
    assert KEY not in echo.text() and "<api-key>" in echo.text()
    assert len(big.body) == 1 << 20 and "larger than" in big.error and not big.ok
    assert halfway.text().endswith("x<api-key>") and KEY[:8] not in halfway.text()
    assert lines[0].startswith("data: ") and st.error and stalled_s < 3.5


def test_the_replace_drain_reads_the_old_deployments_metrics_with_its_key():
    from tqdeploy.runtime.replace import in_flight

    busy = METRICS.replace('engine="0",model_name="tiny"} 0.0', 'engine="0",model_name="tiny"} 2.0', 1)
    with serving({"/metrics": bearer_required(KEY, fixed(200, busy)), "/x": fixed(200, "not metrics 1 2 3")}) as srv:
        assert in_flight(srv.base_url, KEY) == 2.0
        assert in_flight(srv.base_url, None) is None  # refused: unknown, never a crash
    with serving({"/metrics": fixed(200, "vllm:num_requests_running abc\n")}) as srv:
        assert in_flight(srv.base_url) is None


# ---- connect ----


def test_connect_check_sends_no_key_to_a_redirect_target_on_another_port(build, key_file):
    with serving({"*": echo_headers}) as other:
        with serving({"*": redirect(other.base_url + "/v1/models")}) as first:
            code, text, _ = tq("connect", "openai", str(build), "--check", "--json", "--base-url", first.base_url,
                               "--api-key-file", str(key_file), "--served-model-name", "tiny")  # fmt: skip
    assert code == 1, text
    assert other.seen == [] and other.authorizations() == []
    never_leaked(text)
    found = {f["id"]: f for f in json.loads(text[: text.rindex("}") + 1])["findings"]}
    assert found["TQ460"]["severity"] == "error" and "another origin" in found["TQ460"]["evidence"]["answer"]


def test_connect_json_never_carries_a_key_the_server_echoes(build, key_file):
    with serving({"/v1/models": fixed(200, MODELS), "*": echo_headers}) as srv:
        code, text, _ = tq("connect", "claude-code", str(build), "--check", "--json", "--base-url", srv.base_url,
                           "--api-key-file", str(key_file), "--served-model-name", "tiny")  # fmt: skip
    assert code == 1  # the echo is no chat completion
    sent = set(srv.authorizations())
    assert f"Bearer {KEY}" in sent and all(a == f"Bearer {KEY}" or "tqdeploy-wrong-" in a for a in sent)
    never_leaked(text)
    assert "<api-key>" in text  # the echo is shown, with the key replaced


@pytest.mark.parametrize("body", [{"data": 5}, {"data": [1, 2]}, [1], "<html>", {"choices": [1]}])
def test_connect_odd_model_lists_are_findings(build, key_file, body):
    with serving({"*": fixed(200, body)}) as srv:
        code, text, _ = tq("connect", "openai", str(build), "--check", "--json", "--base-url", srv.base_url,
                           "--api-key-file", str(key_file), "--served-model-name", "tiny")  # fmt: skip
    assert code == 1, text
    never_leaked(text)


def test_connect_a_refused_key_is_TQ468(build, key_file):
    with serving({"*": bearer_required("sk-other", fixed(200, MODELS))}) as srv:
        code, text, _ = tq("connect", "openai", str(build), "--check", "--json", "--base-url", srv.base_url,
                           "--api-key-file", str(key_file), "--served-model-name", "tiny")  # fmt: skip
    assert code == 1
    found = {f["id"]: f for f in json.loads(text[: text.rindex("}") + 1])["findings"]}
    assert found["TQ468"]["severity"] == "error" and found["TQ468"]["evidence"]["key_sent"] is True
    assert "--api-key-file" in found["TQ468"]["remediation"]
    never_leaked(text)


# ---- profile ----


def test_profile_url_with_a_password_or_another_scheme_is_one_line(tmp_path):
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(PASSWORD)
    for url in (f"http://admin:{PASSWORD}@127.0.0.1:1", f"file://{secret_file}", "ftp://127.0.0.1/"):
        code, text, _ = tq("profile", "--url", url, "--out", str(tmp_path / "o"))
        assert code == 2, text
        assert len(text.strip().splitlines()) == 2 and text.startswith("tqdeploy: error: --url")
        never_leaked(text)


def test_profile_never_follows_metrics_to_another_host(tmp_path):
    with serving({"*": fixed(200, METRICS)}) as other:
        with serving({"/metrics": redirect(other.base_url + "/metrics")}) as first:
            code, text, _ = tq("profile", "--url", first.base_url, "--json", "--no-chart", "--out", str(tmp_path))
    assert code == 1, text
    assert other.seen == []
    data = json.loads(text[: text.rindex("}") + 1])
    assert [f["id"] for f in data["findings"] if f["severity"] == "error"] == ["TQ469"]


@pytest.mark.parametrize(
    "metrics",
    [b"<html><body>login</body></html>", b"x" * (10 << 20), b"vllm:num_requests_running nan\n" * 3],
    ids=["html", "10MB", "nan"],
)
def test_profile_odd_metrics_are_a_finding_not_an_internal_error(tmp_path, metrics):
    with serving({"/metrics": fixed(200, metrics)}) as srv:
        code, text, took = tq("profile", "--url", srv.base_url, "--json", "--no-chart", "--out", str(tmp_path))
    never_leaked(text)
    data = json.loads(text[: text.rindex("}") + 1])
    ids = [f["id"] for f in data["findings"] if f["severity"] == "error"]
    if metrics.startswith(b"vllm:"):  # Prometheus text with no usable figure: nothing to report, no crash
        assert code == 0 and ids == [] and data["kv"]["num_gpu_blocks"] is None
    else:
        assert code == 1 and ids == ["TQ469"], text


def _fake_vllm(key: str | None, completions) -> dict:
    guard = (lambda r: bearer_required(key, r)) if key else (lambda r: r)
    return {
        "/metrics": fixed(200, METRICS),
        "/v1/models": guard(fixed(200, MODELS)),
        "/v1/completions": guard(completions),
    }


def test_profile_load_without_the_key_is_TQ468_and_with_it_runs(tmp_path, key_file):
    events = [{"choices": [{"text": "a", "token_ids": [5]}]}] * 4
    with serving(_fake_vllm(KEY, sse(events))) as srv:
        load = ("--load", "--concurrency", "1", "--requests", "2", "--json", "--no-chart")
        code, text, _ = tq("profile", "--url", srv.base_url, *load, "--out", str(tmp_path / "a"))
        assert code == 1, text
        never_leaked(text)
        data = json.loads(text[: text.rindex("}") + 1])
        refused = [f for f in data["findings"] if f["id"] == "TQ468"]
        assert refused and refused[0]["evidence"]["key_sent"] is False and "--api-key-file" in refused[0]["remediation"]
        assert data["load"] is None and data["context"]["api_key"] == "none"
        code, text, _ = tq("profile", "--url", srv.base_url, "--api-key-file", str(key_file), *load,
                           "--out", str(tmp_path / "b"))  # fmt: skip
    assert code == 0, text
    never_leaked(text)
    data = json.loads(text[: text.rindex("}") + 1])
    assert data["load"]["steps"][0]["completed"] == 2 and data["load"]["steps"][0]["output_tokens"] == 8
    assert data["context"]["api_key"] == "sent"
    assert KEY not in (tmp_path / "b" / "profile.json").read_text()


def test_profile_duration_bounds_a_stream_that_stalls(tmp_path):
    stall = stalled_stream({"choices": [{"text": "a", "token_ids": [5]}]})
    with serving(_fake_vllm(None, stall)) as srv:
        code, text, took = tq("profile", "--url", srv.base_url, "--load", "--concurrency", "2", "--requests", "4",
                              "--duration", "2", "--json", "--no-chart", "--out", str(tmp_path))  # fmt: skip
    assert took < 2 + 10, f"profile ran {took:.1f} s for --duration 2"  # the CLI's own start-up is the margin
    data = json.loads(text[: text.rindex("}") + 1])
    step = data["load"]["steps"][0]
    assert step["errors"] >= 1 and code == 1  # a stalled request is a failed one (TQ435)
    assert step["seconds"] < 3.0


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--prompt-tokens", "1000000000"], "--prompt-tokens 1000000000 is outside 1..1048576"),
        (["--output-tokens", "0"], "--output-tokens 0 is outside"),
        (["--requests", "10000000"], "--requests 10000000 is outside"),
        (["--concurrency", "1,100000"], "--concurrency 100000 is outside"),
        (["--duration", "nan"], "--duration nan is outside"),
        (["--duration", "inf"], "--duration inf is outside"),
        (["--sample-interval", "nan"], "--sample-interval nan is outside"),
    ],
)
def test_profile_load_parameters_are_bounded(tmp_path, args, needle):
    code, text, took = tq("profile", "--url", "http://127.0.0.1:1", "--load", *args, "--out", str(tmp_path))
    assert code == 2 and needle in text and took < 20, text


def test_profile_prompt_longer_than_the_served_context_is_refused(tmp_path):
    with serving(_fake_vllm(None, sse([]))) as srv:
        code, text, _ = tq("profile", "--url", srv.base_url, "--load", "--prompt-tokens", "5000", "--out",
                           str(tmp_path))  # fmt: skip
    assert code == 2 and "max_model_len 4096" in text, text
    assert not [s for s in srv.seen if s.path == "/v1/completions"]


# ---- status ----


def test_status_never_shows_the_state_base_urls_password(build, run_cli):
    from tqdeploy.runtime import state

    state.new_state(build, base_url=f"http://admin:{PASSWORD}@127.0.0.1:1", served_model_name="tiny")
    for args in ([], ["--json"]):
        code, text, _ = tq("status", str(build), *args)
        assert code in (1, 2), text  # not ready (or the state refused as corrupt): never shown with the password
        never_leaked(text)


def test_without_duration_a_stalled_server_gets_no_more_requests(monkeypatch):
    from tqdeploy.profile import load

    monkeypatch.setattr(load, "REQUEST_TIMEOUT_S", 1.0)  # of silence (120 s in use): short for the test
    stall = stalled_stream({"choices": [{"text": "a", "token_ids": [5]}]})
    with serving(_fake_vllm(None, stall)) as srv:
        t0 = time.monotonic()
        step = load.run_step(Client(srv.base_url), "tiny", load.LoadSpec([1], 4, 4, requests=5), 1)
        took = time.monotonic() - t0
    assert step["requests"] == 1 and step["errors"] == 1 and took < 5, (step, took)
    assert len([s for s in srv.seen if s.path == "/v1/completions"]) == 1


def test_loopback_requests_never_go_through_the_environments_proxy(monkeypatch):
    with serving({"*": fixed(200, MODELS)}) as proxy, serving({"*": fixed(200, MODELS)}) as target:
        for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
            monkeypatch.setenv(var, proxy.base_url)
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        assert Client(target.base_url, KEY).get("/v1/models").ok
    assert proxy.seen == [] and target.authorizations() == [f"Bearer {KEY}"]


def test_status_sends_the_builds_key_only_to_the_builds_own_address(tmp_path, run_cli):
    from pathlib import Path

    from tqdeploy.runtime.status import ServerAnswers

    spec = Path(__file__).parents[2] / "tool" / "tqdeploy" / "deployspec" / "defaults" / "tiny-cpu-demo.toml"
    with serving({}) as own, serving({}) as elsewhere:
        (tmp_path / "spec.toml").write_text(spec.read_text().replace("port = 8000", f"port = {own.server_port}"))
        build = tmp_path / "build"
        assert run_cli("build", str(tmp_path / "spec.toml"), "--out", str(build))[0] == 0
        key = (build / "secrets" / "vllm-api-key").read_text().strip()  # the key `build` created
        for srv in (own, elsewhere):
            srv.routes.update({"/health": fixed(200), "/v1/models": bearer_required(key, fixed(200, MODELS))})
        mine = ServerAnswers.ask(build, own.base_url)
        # a state.json edited to point elsewhere: asked, but without the key
        other = ServerAnswers.ask(build, elsewhere.base_url)
    assert mine.health == 200 and mine.models == ["tiny"] and mine.findings == []
    assert own.authorizations() == [f"Bearer {key}"]
    assert other.health == 200 and other.models is None and elsewhere.authorizations() == []
    assert [f.id for f in other.findings] == ["TQ468"] and other.findings[0].evidence["key_sent"] is False
    assert "is not this build's address" in other.findings[0].remediation


def test_profile_api_key_file_that_is_no_key_file_is_one_line(tmp_path):
    import os

    fifo, folder, binary = tmp_path / "fifo", tmp_path / "folder", tmp_path / "binary"
    os.mkfifo(fifo)
    folder.mkdir()
    binary.write_bytes(b"\x00\xff" + PASSWORD.encode())
    with serving(_fake_vllm(None, sse([]))) as srv:
        for bad in (fifo, folder, binary, tmp_path / "absent"):
            code, text, took = tq("profile", "--url", srv.base_url, "--api-key-file", str(bad), "--out", str(tmp_path))
            assert code == 2 and f"the API key file {bad}" in text and took < 20, text
            never_leaked(text)


def test_profile_duration_cuts_a_stream_still_answering_without_calling_it_failed(tmp_path):
    # A server answering at ~20 tokens/s for 10 s, cut by --duration 2: the H200 acceptance run counted each such
    # request in flight at a step's end as failed (TQ435, exit 1) although every one was still streaming.
    event = f"data: {json.dumps({'choices': [{'text': 'a', 'token_ids': [5]}]})}\n\n".encode()
    steady = lambda _h: Reply(200, chunks=[(0.05, event)] * 200)  # noqa: E731
    with serving(_fake_vllm(None, steady)) as srv:
        code, text, took = tq("profile", "--url", srv.base_url, "--load", "--concurrency", "2", "--requests", "4",
                              "--duration", "2", "--json", "--no-chart", "--out", str(tmp_path))  # fmt: skip
    data = json.loads(text[: text.rindex("}") + 1])
    step = data["load"]["steps"][0]
    assert step["errors"] == 0 and step["cut_at_duration"] == 2, step
    assert step["output_tokens"] >= 20 and step["seconds"] < 3.0  # the cut streams' tokens count
    assert "TQ435" not in {f["id"] for f in data["findings"] if f["severity"] == "error"}, data["findings"]
