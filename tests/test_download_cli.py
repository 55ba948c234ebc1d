"""`tqdeploy download` end to end: token hygiene, Ctrl-C and a mirror killed mid-file, output modes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.hubmirror import Faults, HubMirror, Repo, clean_hub_env, repo  # noqa: F401 (fixtures)
from support.tty import run_on_a_tty

SHARD1 = "model-00001-of-00002.safetensors"
TOKEN = "hf_TESTtokenNeverShown0123456789"
HUBMIRROR = Path(__file__).resolve().parent / "support" / "hubmirror.py"


def all_bytes_under(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_token_is_sent_to_the_mirror_and_never_shown_or_written(repo, tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    dest = tmp_path / "model"
    with HubMirror(repo) as m:
        outputs = [
            run_cli("download", "org/tiny", "--mirror", m.url, "--to", str(dest)),
            run_cli("download", "org/tiny", "--mirror", m.url, "--to", str(dest), "--json"),
            run_cli("download", "--verify", str(dest)),
            run_cli("download", "org/tiny@nope", "--mirror", m.url, "--to", str(tmp_path / "x")),
        ]
        auth = {r["authorization"] for r in m.requests}
    assert [code for code, _, _ in outputs] == [0, 0, 0, 2]
    assert auth == {f"Bearer {TOKEN}"}  # the API call, the resolve URLs and the CDN redirects all carried it
    for _, out, err in outputs:
        assert TOKEN not in out and TOKEN not in err
    assert TOKEN.encode() not in all_bytes_under(dest)
    assert json.loads(outputs[1][1])["token"] == "present"


def test_json_output_and_hf_endpoint_as_default_mirror(repo, tmp_path, run_cli, monkeypatch):
    with HubMirror(repo) as m:
        monkeypatch.setenv("HF_ENDPOINT", m.url)
        code, out, err = run_cli("download", f"org/tiny@{repo.commit}", "--to", str(tmp_path / "m"), "--json")
    data = json.loads(out)
    assert code == 0 and data["schema"] == "tqdeploy.download/1" and data["complete"] is True
    assert data["commit"] == repo.commit and data["token"] == "absent"
    assert {f["endpoint"] for f in data["files"]} == {m.url}
    assert SHARD1 in data["fetched"] and "pytorch_model.bin" in data["skipped"]


def test_mirror_credentials_stay_out_of_manifest_and_output(repo, tmp_path, run_cli):
    with HubMirror(repo) as m:
        with_user = m.url.replace("http://", "http://reader:s3cretpw@")
        code, out, err = run_cli("download", "org/tiny", "--mirror", with_user, "--to", str(tmp_path / "m"))
    assert code == 0, err
    assert "s3cretpw" not in out + err
    assert b"s3cretpw" not in all_bytes_under(tmp_path / "m")


def test_offline_lists_missing_files_and_exit_codes(repo, tmp_path, run_cli):
    dest = tmp_path / "m"
    with HubMirror(repo) as m:
        assert run_cli("download", "org/tiny", "--mirror", m.url, "--to", str(dest))[0] == 0
    code, out, _ = run_cli("download", "org/tiny", "--offline", "--to", str(dest))
    assert code == 0 and "all 8 files present" in out
    (dest / SHARD1).unlink()
    code, out, _ = run_cli("download", "org/tiny", "--offline", "--to", str(dest), "--json")
    assert code == 1 and json.loads(out)["missing"] == [SHARD1]
    code, out, _ = run_cli("download", "--verify", str(dest))
    assert code == 1 and SHARD1 in out and "missing" in out
    code, _, err = run_cli("download", "org/other", "--verify", str(dest))
    assert code == 2 and "holds org/tiny@main" in err


def test_hub_offline_mode_and_a_file_as_target_are_refused(run_cli, tmp_path, tqdeploy_exe):
    (tmp_path / "f").write_text("x")
    code, _, err = run_cli("download", "org/tiny", "--mirror", "http://127.0.0.1:9", "--to", str(tmp_path / "f"))
    assert code == 2 and "is a file, not a folder" in err
    # huggingface_hub reads HF_HUB_OFFLINE once, at import: a fresh process is needed.
    cmd = [tqdeploy_exe, "download", "org/tiny", "--mirror", "http://127.0.0.1:9", "--to", str(tmp_path / "m")]
    res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert res.returncode == 2 and "HF_HUB_OFFLINE is set" in res.stderr and "--offline" in res.stderr


@pytest.mark.parametrize(
    "args, expected",
    [
        ((), "no model given"),
        (("a/b/c",), "is not a repository id"),
        (("org/tiny", "--mirror", "ftp://host"), "is not an http(s) URL"),
        (("--verify", "/nonexistent/dir"), "no tqdeploy-manifest.json"),
        (("--verify", "/tmp", "--offline"), "takes no --offline"),
    ],
)
def test_bad_input_is_one_line_exit_2(run_cli, tmp_path, args, expected):
    code, out, err = run_cli("download", *args)
    assert code == 2 and err.startswith("tqdeploy: error: ") and expected in err and "Traceback" not in err


def test_a_target_that_cannot_be_created_is_one_line_exit_2(repo, run_cli):
    with HubMirror(repo) as m:  # /proc takes no new folders, for root neither
        code, _, err = run_cli("download", "org/tiny", "--mirror", m.url, "--to", "/proc/tqdeploy-test/m")
    assert code == 2 and err.startswith("tqdeploy: error: cannot write /proc/tqdeploy-test")
    assert "--to" in err and "Traceback" not in err and "internal error" not in err


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_ctrl_c_exits_130_and_the_next_run_resumes_with_range(repo, tmp_path, tqdeploy_exe):
    dest = tmp_path / "m"
    partial = dest / ".tqdeploy" / "partial" / f"{SHARD1}.part"
    size = repo.files[SHARD1]["size"]
    with HubMirror(repo, Faults(bps=1_000_000)) as m:
        cmd = [tqdeploy_exe, "download", "org/tiny", "--mirror", m.url, "--to", str(dest), "--json"]
        # Ctrl-C as at a terminal, even when the suite runs with SIGINT ignored (`nohup make test &`):
        # an ignored disposition would be inherited by the child, so it is reset there.
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        assert wait_for(lambda: partial.exists() and partial.stat().st_size > 200_000)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "interrupted" in err and "Traceback" not in err
        kept = partial.stat().st_size
        assert 0 < kept < size and not (dest / SHARD1).exists()
        kept_all = sum(p.stat().st_size for p in (dest / ".tqdeploy" / "partial").glob("*.part"))
        m.faults.bps = None
        before = len(m.requests)
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        ranges = [
            r["range"] for r in m.requests[before:] if r["path"].endswith(SHARD1) and r["path"].startswith("/cdn/")
        ]
    assert res.returncode == 0, res.stderr
    assert ranges == [f"bytes={kept}-"]
    second = json.loads(res.stdout)  # only what was still missing crossed the network
    assert second["bytes_fetched"] == sum(repo.files[p]["size"] for p in second["fetched"]) - kept_all
    assert (dest / SHARD1).read_bytes() == (repo.root / SHARD1).read_bytes()


def start_mirror_process(repo: Repo, log: Path, port: int = 0, faults: dict | None = None):
    proc = subprocess.Popen(
        [
            sys.executable,
            str(HUBMIRROR),
            "--root",
            str(repo.root),
            "--repo-id",
            repo.repo_id,
            "--port",
            str(port),
            "--faults",
            json.dumps(faults or {}),
            "--log",
            str(log),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    assert line.startswith("PORT "), line
    return proc, int(line.split()[1])


def test_mirror_killed_mid_file_then_restarted_resumes(repo, tmp_path, run_cli):
    dest, log = tmp_path / "m", tmp_path / "requests.jsonl"
    partial = dest / ".tqdeploy" / "partial" / f"{SHARD1}.part"
    proc, port = start_mirror_process(repo, log, faults={"die_after": {SHARD1: 1_000_000}})
    try:
        url = f"http://127.0.0.1:{port}"
        code, out, err = run_cli("download", "org/tiny", "--mirror", url, "--to", str(dest), "--retries", "1")
        assert proc.wait(timeout=10) == 3  # the mirror process died mid-file
        assert code == 1 and SHARD1 in err and "re-run the same command to resume" in err
        kept = partial.stat().st_size
        assert 0 < kept <= 1_000_000 and not (dest / SHARD1).exists()
        proc, _ = start_mirror_process(repo, log, port=port)
        code, out, err = run_cli("download", "org/tiny", "--mirror", url, "--to", str(dest), "--json")
        assert code == 0, err
    finally:
        proc.kill()
        proc.wait()
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    shard_gets = [r for r in requests if r["path"].startswith("/cdn/") and r["path"].endswith(SHARD1)]
    assert shard_gets[-1]["range"] == f"bytes={kept}-"
    assert (dest / SHARD1).read_bytes() == (repo.root / SHARD1).read_bytes()


def test_progress_bars_on_a_terminal_and_none_with_json(repo, tmp_path, tqdeploy_exe):
    with HubMirror(repo, Faults(bps=20_000_000)) as m:
        base = [tqdeploy_exe, "download", "org/tiny", "--mirror", m.url]
        code, shown = run_on_a_tty([*base, "--to", str(tmp_path / "a")])
        assert code == 0 and "download 7 file(s)" in shown and "MB" in shown
        code, shown = run_on_a_tty([*base, "--to", str(tmp_path / "b"), "--json"])
        assert code == 0 and "file(s)" not in shown
        code, shown = run_on_a_tty([tqdeploy_exe, "download", "--verify", str(tmp_path / "a")])
        assert code == 0 and "verify 8 file(s)" in shown and "MB" in shown  # the hashing bar


def test_progress_lines_without_a_terminal(repo, tmp_path, tqdeploy_exe):
    # nohup, CI or a pipe: no bars, but never silent (issue 21: stderr stayed empty for a whole download)
    with HubMirror(repo) as m:
        base = [tqdeploy_exe, "download", "org/tiny", "--mirror", m.url]
        res = subprocess.run([*base, "--to", str(tmp_path / "a")], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        lines = [line for line in res.stderr.splitlines() if line.startswith("tqdeploy: download 7 file(s): ")]
        assert lines and lines[-1].endswith("MB (100%)"), res.stderr
        assert len(lines) <= 11 and "\r" not in res.stderr  # a tenth at a time, no bar redraws
        quiet = subprocess.run(
            [*base, "--to", str(tmp_path / "b"), "--json"], capture_output=True, text=True, timeout=120
        )
        assert quiet.returncode == 0 and "file(s):" not in quiet.stderr


def test_the_repair_command_verify_prints_works_as_printed(repo, tmp_path, run_cli, monkeypatch):
    import re
    import shlex

    monkeypatch.chdir(tmp_path)
    dest = tmp_path / "m"
    with HubMirror(repo) as m:
        assert run_cli("download", "org/tiny", "--mirror", m.url, "--to", str(dest))[0] == 0
        with open(dest / SHARD1, "r+b") as fh:
            fh.write(b"\0" * 8)  # a damaged shard
        code, out, _ = run_cli("download", "--verify", str(dest))
        assert code == 1, out
        printed = re.search(r"`(tqdeploy download [^`]+)` fetches only those again", out).group(1)
        assert f"--mirror {m.url}" in printed  # the mirror it came from, not the default endpoint
        assert run_cli(*shlex.split(printed)[1:])[0] == 0  # run as printed
    assert (dest / SHARD1).read_bytes() == (repo.root / SHARD1).read_bytes()
    assert run_cli("download", "--verify", str(dest))[0] == 0
