"""Hostile mirrors: credentials in HF_ENDPOINT, a trickling mirror, a model-info call that never
answers, and mirrors whose revision API ignores ?blobs=true. Real HTTP on 127.0.0.1 (tests/support/hubmirror.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from hostile.seeds import PASSWORD, leftovers
from support.hubmirror import Faults, HubMirror, clean_hub_env, repo  # noqa: F401 (fixtures)


def _with_password(url: str) -> str:
    return url.replace("http://", f"http://user:{PASSWORD}@")


GOOD_SCRIPT = Path(__file__).resolve().parent.parent / "fixtures" / "lint" / "good_serve.sh"


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--model", "org/missing@main", "--gpu", "H200"],
        ["init", "--model", "org/missing@main", "--no-probe", "--out", "{tmp}/t.toml"],
        ["lint", "--model", "org/missing@main", "--file", str(GOOD_SCRIPT)],
        ["doctor", "--model", "org/missing@main"],
    ],
    ids=["plan", "init", "lint", "doctor"],
)
def test_hf_endpoint_password_is_never_printed(run_cli, repo, monkeypatch, tmp_path, argv):
    with HubMirror(repo) as m:
        monkeypatch.setenv("HF_ENDPOINT", _with_password(m.url))
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        code, out, err = run_cli(*[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code in (1, 2) and PASSWORD not in out + err, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert "org/missing" in out + err


def test_hf_endpoint_password_is_never_printed_or_recorded_by_download(run_cli, repo, monkeypatch, tmp_path):
    dest = tmp_path / "d"
    with HubMirror(repo) as m:
        monkeypatch.setenv("HF_ENDPOINT", _with_password(m.url))
        code, out, err = run_cli("download", "org/tiny@main", "--to", str(dest), "--json")
    assert code == 0, err
    assert PASSWORD not in out + err
    assert not [p for p in dest.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]


def test_a_trickling_mirror_is_given_up_on_within_the_minimum_rate(repo, tmp_path):
    from tqdeploy.download import RetryPolicy, run_download
    from tqdeploy.errors import TQError

    policy = RetryPolicy(attempts=2, base_wait_s=0.0, rate_window_s=1.0, min_bytes_per_s=1000.0)
    started = time.monotonic()
    with HubMirror(repo, Faults(trickle_s=0.05)) as m, pytest.raises(TQError) as err:
        run_download("org/tiny", "main", tmp_path / "d", [m.url], progress=False, policy=policy)
    assert time.monotonic() - started < 30
    assert "under the minimum 1000 B/s" in err.value.message
    assert leftovers(tmp_path / "d") == [] or all(p.endswith(".incomplete") for p in leftovers(tmp_path / "d"))


def test_the_model_info_call_is_retried_when_it_times_out(repo):
    from tqdeploy.download.remote import list_repo
    from tqdeploy.download.transfer import RetryPolicy

    events: list[str] = []
    with HubMirror(repo, Faults(api_delays_s=[3.0])) as m:
        listing = list_repo(
            [m.url], "org/tiny", "main", False, events.append, timeout_s=1.0, policy=RetryPolicy(base_wait_s=0.0)
        )
    assert listing.commit == repo.commit
    assert any("retry 1/4" in e and "Timeout" in e for e in events), events


@pytest.mark.parametrize(
    "faults,source",
    [(Faults(ignore_blobs=True), "tree API"), (Faults(ignore_blobs=True, tree_status=404), "HEAD on resolve URLs")],
    ids=["tree", "head"],
)
def test_a_mirror_without_blobs_falls_back_and_still_verifies(run_cli, repo, tmp_path, faults, source):
    dest = tmp_path / "d"
    with HubMirror(repo, faults) as m:
        code, out, err = run_cli("download", "org/tiny@main", "--to", str(dest), "--mirror", m.url, "--json")
    assert code == 0, err
    assert f"they come from the {source}" in out + err
    manifest = json.loads((dest / "tqdeploy-manifest.json").read_text())
    assert manifest["commit"] == repo.commit
    for f in manifest["files"]:
        expected = repo.files[f["path"]]
        assert f["size"] == expected["size"]
        assert (f.get("sha256") == expected["sha256"]) if expected["lfs"] else f.get("git_oid") == expected["oid"]
    code, out, err = run_cli("download", "--verify", str(dest), "--json")
    assert code == 0 and json.loads(out)["ok"] is True


def test_a_second_download_into_the_same_folder_says_another_one_runs(run_cli, repo, tmp_path):
    import fcntl
    import os

    dest = tmp_path / "d"
    (dest / ".tqdeploy").mkdir(parents=True)
    fd = os.open(dest / ".tqdeploy" / "download.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as the first download holds it
    try:
        with HubMirror(repo) as m:
            code, _, err = run_cli("download", "org/tiny@main", "--to", str(dest), "--mirror", m.url)
    finally:
        os.close(fd)
    assert code == 2 and err.startswith(f"tqdeploy: error: another tqdeploy download is writing into {dest}"), err
    assert not (dest / "tqdeploy-manifest.json").exists()


def test_a_trickling_mirror_is_stopped_by_the_overall_deadline(run_cli, repo, tmp_path):
    """One byte every 0.05 s stays a "live" transfer for the 30 s rate window, file after file: only the
    overall --deadline bounds the run (it once ran past 60 s with --retries 0)."""
    dest = tmp_path / "d"
    started = time.monotonic()
    with HubMirror(repo, Faults(trickle_s=0.05)) as m:
        code, out, err = run_cli(
            "download", "org/tiny@main", "--to", str(dest), "--mirror", m.url, "--retries", "0", "--deadline", "3"
        )
    took = time.monotonic() - started
    assert code == 1, err
    assert "ran past its deadline of 3 s (--deadline)" in err.splitlines()[0], err
    assert "Traceback" not in err and took < 15, took
    partials = [p for p in dest.rglob("*") if p.is_file() and ".tqdeploy" in p.parts and p.stat().st_size > 0]
    assert partials, "what arrived before the deadline is kept for the resume"
    assert not (dest / "tqdeploy-manifest.json").exists() or not json.loads(
        (dest / "tqdeploy-manifest.json").read_text()
    ).get("complete")


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-5", "1e12"])
def test_a_deadline_that_is_not_a_duration_is_refused(run_cli, tmp_path, value):
    code, _, err = run_cli("download", "org/tiny@main", "--to", str(tmp_path / "d"), "--deadline", value)
    assert code == 2 and err.startswith(f"tqdeploy: error: --deadline {float(value):g} is not"), err
    assert not (tmp_path / "d").exists()
