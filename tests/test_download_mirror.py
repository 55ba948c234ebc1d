"""download_model / run_download against a real Hub mirror on loopback, with injected faults."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from support.hubmirror import Faults, HubMirror, Repo, clean_hub_env, make_repo, repo  # noqa: F401 (fixtures)
from tqdeploy.download import RetryPolicy, check_offline, download_model, load_manifest, run_download, verify_dir
from tqdeploy.download.diskspace import MARGIN_FLOOR, Usage
from tqdeploy.errors import TQError

FAST = RetryPolicy(attempts=4, base_wait_s=0.01, max_wait_s=0.05)
SHARD1 = "model-00001-of-00002.safetensors"
SHARD2 = "model-00002-of-00002.safetensors"
SERVING = {
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "model.safetensors.index.json",
    SHARD1,
    SHARD2,
}


def content_gets(mirror: HubMirror, path: str) -> list[dict]:
    """GETs that carried the bytes of ``path`` (the resolve URL for small files, the CDN URL for LFS)."""
    return [
        r
        for r in mirror.requests
        if r["method"] == "GET"
        and r["path"].endswith("/" + path)
        and (r["path"].startswith("/cdn/") or not path.endswith(".safetensors"))
    ]


def run(mirror_urls, dest, **kw):
    events: list[str] = []
    outcome = run_download(
        "org/tiny",
        kw.pop("revision", "main"),
        dest,
        mirror_urls,
        policy=kw.pop("policy", FAST),
        progress=False,
        on_event=events.append,
        **kw,
    )
    return outcome, events


def test_downloads_only_serving_files_verified_with_manifest(repo, tmp_path):
    with HubMirror(repo) as m:
        outcome, events = run([m.url], tmp_path / "model")
    dest = tmp_path / "model"
    manifest = json.loads((dest / "tqdeploy-manifest.json").read_text())
    assert manifest["schema"] == "tqdeploy.download.manifest/1" and manifest["complete"] is True
    assert manifest["commit"] == repo.commit and manifest["revision"] == "main"
    assert {f["path"] for f in manifest["files"]} == SERVING
    for f in manifest["files"]:
        assert f["endpoint"] == m.url
        assert f["sha256"] == repo.files[f["path"]]["sha256"] and f["size"] == repo.files[f["path"]]["size"]
        assert (dest / f["path"]).read_bytes() == (repo.root / f["path"]).read_bytes()
    assert not (dest / "consolidated.safetensors").exists() and not (dest / "original").exists()
    assert not (dest / ".tqdeploy").exists()  # no partial files left behind
    assert set(outcome.skipped) == {
        ".gitattributes",
        "README.md",
        "consolidated.safetensors",
        "original/consolidated.00.pth",
        "pytorch_model.bin",
    }
    assert events == [] and outcome.bytes_fetched == sum(repo.files[p]["size"] for p in SERVING)


def test_second_run_verifies_in_place_and_fetches_nothing(repo, tmp_path):
    with HubMirror(repo) as m:
        run([m.url], tmp_path / "model")
        before = len(m.requests)
        outcome, _ = run([m.url], tmp_path / "model")
        again = m.requests[before:]
    assert outcome.fetched == [] and set(outcome.reused) == SERVING and outcome.bytes_fetched == 0
    assert all(r["path"].startswith("/api/") for r in again)


def test_flipped_byte_is_named_and_only_that_file_fetched_again(repo, tmp_path):
    with HubMirror(repo, Faults(flip={SHARD1: 1})) as m:
        outcome, events = run([m.url], tmp_path / "model")
        assert len(content_gets(m, SHARD1)) == 2 and len(content_gets(m, SHARD2)) == 1
    assert any(SHARD1 in e and "failed verification" in e and "sha256" in e for e in events)
    assert verify_dir(tmp_path / "model", progress=False).ok


def test_short_copy_is_named_and_fetched_again(repo, tmp_path):
    with HubMirror(repo, Faults(short={SHARD2: 1})) as m:
        outcome, events = run([m.url], tmp_path / "model")
    assert any(SHARD2 in e and "bytes" in e for e in events), events
    assert (tmp_path / "model" / SHARD2).read_bytes() == (repo.root / SHARD2).read_bytes()


def test_dropped_connection_resumes_with_range(repo, tmp_path):
    size = repo.files[SHARD1]["size"]
    with HubMirror(repo, Faults(cut={SHARD1: 1})) as m:
        outcome, events = run([m.url], tmp_path / "model")
        gets = content_gets(m, SHARD1)
    assert gets[0]["range"] is None and gets[1]["range"] == f"bytes={size // 2}-"
    assert any("transfer broke off" in e for e in events)
    assert (tmp_path / "model" / SHARD1).read_bytes() == (repo.root / SHARD1).read_bytes()


def test_429_and_503_are_retried_then_succeed(repo, tmp_path):
    faults = Faults(status={SHARD2: [429, 503], "config.json": [429]}, api_status=[503], retry_after=None)
    with HubMirror(repo, faults) as m:
        outcome, events = run([m.url], tmp_path / "model")
        assert len(content_gets(m, SHARD2)) == 3
    assert any("HTTP 503; retry 1/3" in e and "mirror" in e for e in events)  # the API call
    assert any(SHARD2 in e and "HTTP 429; retry 1/3" in e for e in events)
    assert any(SHARD2 in e and "HTTP 503; retry 2/3" in e for e in events)
    assert set(outcome.fetched) == SERVING


def test_retry_after_is_honoured(repo, tmp_path):
    slept: list[float] = []
    from tqdeploy.download import transfer
    from tqdeploy.download.remote import list_repo

    with HubMirror(repo, Faults(status={"config.json": [429]}, retry_after="7")) as m:
        listing = list_repo([m.url], "org/tiny", "main", None, print)
        job = transfer.Fetch(
            f"{m.url}/org/tiny/resolve/{repo.commit}/config.json",
            tmp_path / "c.part",
            repo.files["config.json"]["size"],
            repo.commit,
            {},
        )
        transfer.fetch(job, RetryPolicy(), has_fallback=False, sleep=slept.append)
    assert slept == [7.0] and listing.commit == repo.commit


def test_persistent_429_gives_up_naming_the_file_and_keeps_nothing_at_final_path(repo, tmp_path):
    with HubMirror(repo, Faults(status={SHARD1: [429] * 10})) as m:
        with pytest.raises(TQError) as err:
            run([m.url], tmp_path / "model")
    assert err.value.exit_code == 1 and SHARD1 in err.value.message and "HTTP 429" in err.value.message
    assert not (tmp_path / "model" / SHARD1).exists()
    assert check_offline(tmp_path / "model").missing == [SHARD1]


def test_first_mirror_down_falls_back_and_says_so(repo, tmp_path):
    with HubMirror(repo) as m:
        dead = "http://127.0.0.1:9"  # discard port: nothing listens there
        outcome, events = run([dead, m.url], tmp_path / "model")
    assert any(dead in e and "trying " + m.url in e for e in events)
    assert {f.endpoint for f in outcome.manifest.files} == {m.url}


def test_file_level_fallback_when_first_mirror_serves_bad_copies(repo, tmp_path):
    with HubMirror(repo, Faults(flip={SHARD2: 5})) as bad, HubMirror(repo) as good:
        outcome, events = run([bad.url, good.url], tmp_path / "model")
    assert outcome.manifest.file(SHARD2).endpoint == good.url
    assert outcome.manifest.file(SHARD1).endpoint == bad.url
    assert sum("failed verification" in e for e in events) == 2


def test_wrong_revision_is_a_clear_error(repo, tmp_path):
    with HubMirror(repo) as m:
        with pytest.raises(TQError) as err:
            run([m.url], tmp_path / "model", revision="no-such-branch")
    assert err.value.exit_code == 2
    assert "no revision 'no-such-branch'" in err.value.message and "after '@'" in err.value.remediation
    assert not (tmp_path / "model").exists()


def test_tag_and_commit_resolve_to_the_same_commit(repo, tmp_path):
    with HubMirror(repo) as m:
        a, _ = run([m.url], tmp_path / "a", revision="v1.0")
        b, _ = run([m.url], tmp_path / "b", revision=repo.commit)
    assert a.manifest.commit == b.manifest.commit == repo.commit


def test_disk_too_small_refuses_with_both_figures(repo, tmp_path):
    weights = sum(repo.files[p]["size"] for p in SERVING if p != "model.safetensors.index.json")
    free = MARGIN_FLOOR  # less than the files + the 1 GiB margin
    with HubMirror(repo) as m:
        with pytest.raises(TQError) as err:
            run([m.url], tmp_path / "model", disk_usage=lambda p: Usage(10 * free, 9 * free, free))
        assert content_gets(m, SHARD1) == []  # refused before any weight was fetched
    msg = err.value.message
    assert err.value.exit_code == 1
    assert f"needs {weights / 1e9:.2f} GB + {MARGIN_FLOOR / 1e9:.2f} GB margin" in msg
    assert f"{free / 1e9:.2f} GB is free" in msg
    assert "--to" in err.value.remediation and "free " in err.value.remediation
    assert not (tmp_path / "model" / SHARD1).exists()


def test_disk_too_small_on_a_real_tmpfs(repo, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or os.system(f"mount -t tmpfs -o size=8m tmpfs {mnt} 2>/dev/null") != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        with HubMirror(repo) as m:
            with pytest.raises(TQError) as err:
                run([m.url], mnt / "model")
        assert "GB is free" in err.value.message and "0.01 GB is free" in err.value.message
        assert not (mnt / "model" / SHARD1).exists()
    finally:
        os.system(f"umount {mnt}")


def test_disk_filling_up_during_the_download_is_one_line_and_resumable(repo, tmp_path):
    # Something else fills the disk after the check passed: the disk-usage probe says there is room,
    # the real 4 MB tmpfs runs out (ENOSPC) while the 5 MB of weights are written.
    mnt = tmp_path / "tiny-fs"
    mnt.mkdir()
    if os.geteuid() != 0 or os.system(f"mount -t tmpfs -o size=4m tmpfs {mnt} 2>/dev/null") != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        roomy = lambda p: Usage(100 * MARGIN_FLOOR, 0, 100 * MARGIN_FLOOR)  # noqa: E731
        with HubMirror(repo) as m:
            with pytest.raises(TQError) as err:
                run([m.url], mnt / "model", disk_usage=roomy, workers=1)
        assert err.value.exit_code == 1 and err.value.message.startswith("disk full while writing")
        assert "resumes" in err.value.remediation
        assert not [
            p
            for p in (SHARD1, SHARD2)
            if (mnt / "model" / p).exists() and (mnt / "model" / p).read_bytes() != (repo.root / p).read_bytes()
        ]
        kept = {p.name: p.stat().st_size for p in (mnt / "model" / ".tqdeploy" / "partial").glob("*.part")}
        assert any(kept.values())  # what was written before the disk filled is kept
        assert os.system(f"mount -o remount,size=64m {mnt}") == 0  # space freed
        with HubMirror(repo) as m:
            run([m.url], mnt / "model", disk_usage=roomy, workers=1)
            ranges = {r["path"].rsplit("/", 1)[-1]: r["range"] for r in m.requests if r["path"].startswith("/cdn/")}
        assert any(ranges.get(name[: -len(".part")]) == f"bytes={size}-" for name, size in kept.items() if size)
        assert verify_dir(mnt / "model", progress=False).ok
    finally:
        os.system(f"umount {mnt}")


def test_offline_lists_exactly_the_missing_files(repo, tmp_path):
    with HubMirror(repo) as m:
        run([m.url], tmp_path / "model")
    (tmp_path / "model" / SHARD2).unlink()
    (tmp_path / "model" / "tokenizer.json").write_text("{}")  # wrong size: incomplete
    assert check_offline(tmp_path / "model", "org/tiny").missing == [SHARD2, "tokenizer.json"]
    with pytest.raises(TQError) as err:
        download_model("org/tiny", "main", tmp_path / "model", None, offline=True, progress=False)
    assert err.value.exit_code == 1 and SHARD2 in err.value.message and "tokenizer.json" in err.value.message
    with pytest.raises(TQError, match="no tqdeploy-manifest.json"):
        check_offline(tmp_path / "elsewhere")


def test_bad_file_on_disk_is_found_by_verify_and_only_it_fetched_again(repo, tmp_path):
    dest = tmp_path / "model"
    with HubMirror(repo) as m:
        run([m.url], dest)
        with open(dest / SHARD2, "r+b") as fh:
            fh.seek(1000)
            byte = fh.read(1)
            fh.seek(1000)
            fh.write(bytes([byte[0] ^ 1]))
        report = verify_dir(dest, progress=False)
        assert not report.ok and [(f.path, f.status) for f in report.bad] == [(SHARD2, "sha256")]
        assert report.remote_checked
        before = len(m.requests)
        outcome, events = run([m.url], dest)
        fetched = [r["path"] for r in m.requests[before:] if not r["path"].startswith("/api/")]
    assert outcome.repaired == [SHARD2] and outcome.fetched == [SHARD2]
    assert all(p.endswith(SHARD2) for p in fetched)
    assert any(SHARD2 in e and "is bad" in e for e in events)
    assert verify_dir(dest, progress=False).ok


def test_verify_catches_an_edited_manifest_through_the_remote_metadata(repo, tmp_path):
    dest = tmp_path / "model"
    with HubMirror(repo) as m:
        run([m.url], dest)
        (dest / "config.json").write_text('{"architectures": ["Evil"]}')
        data = json.loads((dest / "tqdeploy-manifest.json").read_text())
        for f in data["files"]:
            if f["path"] == "config.json":  # made consistent with the edited file
                from tqdeploy.download.hashing import digest_file

                d = digest_file(dest / "config.json")
                f.update(size=d.size, sha256=d.sha256, git_oid=d.git_oid)
        (dest / "tqdeploy-manifest.json").write_text(json.dumps(data))
        report = verify_dir(dest, progress=False)
    assert [(f.path, f.status) for f in report.bad] == [("config.json", "metadata")]
    offline_report = verify_dir(dest, ["http://127.0.0.1:9"], progress=False)  # mirror unreachable
    assert offline_report.ok and not offline_report.remote_checked
    assert "not reachable" in offline_report.remote_note


def test_mirror_serving_another_commit_is_not_used(repo, tmp_path, tmp_path_factory):
    other = Repo("org/tiny", make_repo(tmp_path_factory.mktemp("other"), shard_bytes=(1000, 2000)))
    with HubMirror(repo) as good, HubMirror(other) as stale:
        from tqdeploy.download.remote import list_repo

        listing = list_repo([good.url], "org/tiny", "main", None, print)
        from tqdeploy.download import transfer

        job = transfer.Fetch(
            f"{stale.url}/org/tiny/resolve/main/config.json",
            tmp_path / "c.part",
            repo.files["config.json"]["size"],
            listing.commit,
            {},
        )
        with pytest.raises(transfer.MirrorFailed, match="serves commit"):
            transfer.fetch(job, FAST, has_fallback=True)


def test_manifest_roundtrip(repo, tmp_path):
    with HubMirror(repo) as m:
        manifest = download_model("org/tiny", "main", tmp_path / "model", [m.url], progress=False)
    assert load_manifest(tmp_path / "model") == manifest


def test_the_mirror_speaks_the_hub_api_huggingface_hub_itself_uses(repo, tmp_path):
    # The stand-in is only worth something if huggingface_hub's own downloaders accept it unchanged.
    from huggingface_hub import hf_hub_download, snapshot_download

    with HubMirror(repo) as m:
        path = hf_hub_download("org/tiny", SHARD1, revision="v1.0", endpoint=m.url, local_dir=tmp_path / "one")
        snap = snapshot_download("org/tiny", endpoint=m.url, local_dir=tmp_path / "snap", allow_patterns=["*.json"])
        heads = [r for r in m.requests if r["method"] == "HEAD"]
    assert Path(path).read_bytes() == (repo.root / SHARD1).read_bytes()
    assert {p.name for p in Path(snap).glob("*.json")} == {p for p in repo.files if p.endswith(".json")}
    assert heads  # the metadata calls (ETag, X-Repo-Commit, X-Linked-Size) were answered
