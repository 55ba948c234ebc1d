"""`tqdeploy download` driven by a spec, recording the resolved commit in a real build's lock.

The build directories are rendered by `tqdeploy build` itself; the model comes from the loopback mirror.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from support.hubmirror import HubMirror, Repo, clean_hub_env, make_repo, repo  # noqa: F401 (fixtures)

LOCK = "tqdeploy.lock.json"
RECORDED = {"resolved_commit", "manifest"}


def spec_text(
    mirrors: list[str], revision: str = "main", models_dir: str = "./models", model: str = 'repo = "org/tiny"'
) -> str:
    rev = f'revision = "{revision}"\n' if "repo" in model else ""
    return (
        f'schema = 1\nname = "tiny-mirror"\nvariant = "cpu"\n\n[model]\n{model}\n{rev}served_name = "tiny"\n'
        f"mirrors = {json.dumps(mirrors)}\n\n"
        '[vllm]\nversion = "0.32.0"\nmax_model_len = 512\n\n[image]\nbase = "python:3.11-slim-bookworm"\n\n'
        f'[resources]\ngpus = []\n\n[storage]\nmodels_dir = "{models_dir}"\n'
    )


def make_build(run_cli, tmp_path: Path, mirror: str, **kw) -> Path:
    spec = tmp_path / "tqdeploy.toml"
    spec.write_text(spec_text([mirror], **kw))
    code, _, err = run_cli("build", str(spec), "--out", str(tmp_path / "build"))
    assert code == 0, err
    return tmp_path / "build"


def lock_of(build: Path) -> dict:
    return json.loads((build / LOCK).read_text())


def without_recorded(lock: dict) -> dict:
    lock = json.loads(json.dumps(lock))
    for key in RECORDED:
        lock["pins"]["model"].pop(key, None)
    return lock


def assert_check_green(run_cli, build: Path, spec: Path) -> None:
    code, out, err = run_cli("build", "--check", str(build))
    assert code == 0, out + err
    code, out, err = run_cli("build", str(spec), "--check", str(build), "--json")
    assert code == 0 and json.loads(out)["stale"] == [], out + err


def test_spec_drives_the_download_and_the_commit_lands_in_the_lock(repo, tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the spec says where to fetch from, not this
    with HubMirror(repo) as m:
        build = make_build(run_cli, tmp_path, m.url)
        before = (build / LOCK).read_bytes()
        code, out, err = run_cli("download", "--spec", str(build / "tqdeploy.toml"), "--json")
    assert code == 0, err
    data = json.loads(out)
    dest = build / "models" / "org--tiny"  # storage.models_dir of the build, as compose mounts it
    assert data["dest"] == str(dest) and data["commit"] == repo.commit
    assert {f["endpoint"] for f in data["files"]} == {m.url}  # the spec's mirror
    assert data["lock"] == {"path": str(build / LOCK), "resolved_commit": repo.commit, "previous": None}
    model = lock_of(build)["pins"]["model"]
    assert model["resolved_commit"] == repo.commit and model["revision"] == "main"
    assert model["manifest"] == "models/org--tiny/tqdeploy-manifest.json"
    assert json.loads((build / model["manifest"]).read_text())["commit"] == repo.commit
    # Only the two keys were added; every other byte is still what build wrote.
    assert without_recorded(lock_of(build)) == json.loads(before)
    assert (json.dumps(without_recorded(lock_of(build)), indent=2, sort_keys=True) + "\n").encode() == before
    assert_check_green(run_cli, build, tmp_path / "tqdeploy.toml")
    assert not list(build.glob(f".{LOCK}.*"))  # the atomic write left no temp file


def test_rendered_download_sh_records_the_commit_in_its_own_build(repo, tmp_path, run_cli, tqdeploy_exe):
    with HubMirror(repo) as m:
        build = make_build(run_cli, tmp_path, m.url)
        env = {**os.environ, "PATH": f"{Path(tqdeploy_exe).parent}{os.pathsep}{os.environ['PATH']}"}
        res = subprocess.run(
            [str(build / "download.sh")], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
        )
    assert res.returncode == 0, res.stderr
    assert f"lock: pins.model.resolved_commit = {repo.commit}" in res.stdout
    assert lock_of(build)["pins"]["model"]["resolved_commit"] == repo.commit
    assert (build / "models" / "org--tiny" / "config.json").is_file()
    assert_check_green(run_cli, build, tmp_path / "tqdeploy.toml")


def test_explicit_lock_gives_the_revision_and_the_build_dir(repo, tmp_path, run_cli):
    with HubMirror(repo) as m:
        build = make_build(run_cli, tmp_path, m.url, revision="v1.0")
        elsewhere = tmp_path / "models-elsewhere" / "tiny"
        code, out, err = run_cli(
            "download", "org/tiny", "--mirror", m.url, "--to", str(elsewhere), "--lock", str(build / LOCK), "--json"
        )
        assert code == 0, err
        assert json.loads(out)["revision"] == "v1.0"  # no @REV: the revision the build pins
        model = lock_of(build)["pins"]["model"]
        assert model["resolved_commit"] == repo.commit and model["manifest"] == str(
            elsewhere / "tqdeploy-manifest.json"
        )
        # A spec outside any build directory: --lock says which build its relative models_dir belongs to.
        code, out, err = run_cli("download", "--spec", str(tmp_path / "tqdeploy.toml"), "--lock", str(build), "--json")
    assert code == 0, err
    assert json.loads(out)["dest"] == str(build / "models" / "org--tiny")
    assert_check_green(run_cli, build, tmp_path / "tqdeploy.toml")


def test_a_lock_for_another_revision_is_refused_before_any_request(repo, tmp_path, run_cli):
    with HubMirror(repo) as m:
        build = make_build(run_cli, tmp_path, m.url, revision="v1.0")
        before = (build / LOCK).read_bytes()
        seen = len(m.requests)
        code, _, err = run_cli(
            "download", "org/tiny@main", "--mirror", m.url, "--to", str(tmp_path / "m"), "--lock", str(build / LOCK)
        )
        assert len(m.requests) == seen  # nothing asked of the mirror
    assert code == 2 and err.count("\n") == 2 and "pins org/tiny@v1.0, not org/tiny@main" in err
    assert not (tmp_path / "m").exists() and (build / LOCK).read_bytes() == before


def test_target_in_a_build_models_dir_for_another_revision_downloads_but_leaves_the_lock(repo, tmp_path, run_cli):
    with HubMirror(repo) as m:
        build = make_build(run_cli, tmp_path, m.url, revision="v1.0")
        before = (build / LOCK).read_bytes()
        code, out, err = run_cli(
            "download", "org/tiny@main", "--mirror", m.url, "--to", str(build / "models" / "org--tiny"), "--json"
        )
    assert code == 0, err
    data = json.loads(out)
    assert data["lock"] is None and any("commit not recorded" in e and "v1.0" in e for e in data["events"])
    assert (build / LOCK).read_bytes() == before


def test_a_folder_inside_a_build_that_it_does_not_serve_leaves_the_lock(repo, tmp_path, run_cli):
    with HubMirror(repo) as m:
        build = make_build(run_cli, tmp_path, m.url)
        before = (build / LOCK).read_bytes()
        code, out, err = run_cli(
            "download", "org/tiny@main", "--mirror", m.url, "--to", str(build / "models" / "tiny-copy"), "--json"
        )
    assert code == 0, err
    data = json.loads(out)
    served = build / "models" / "org--tiny"
    assert data["lock"] is None and any(f"serves its model from {served}" in e for e in data["events"])
    assert (build / LOCK).read_bytes() == before


def test_a_moved_branch_is_recorded_with_the_commit_it_replaces(repo, tmp_path, tmp_path_factory, run_cli):
    moved = Repo("org/tiny", make_repo(tmp_path_factory.mktemp("moved"), shard_bytes=(1000, 2000)))
    assert moved.commit != repo.commit
    with HubMirror(repo) as old, HubMirror(moved) as new:
        build = make_build(run_cli, tmp_path, old.url)
        spec = str(build / "tqdeploy.toml")
        assert run_cli("download", "--spec", spec)[0] == 0
        code, out, err = run_cli("download", "--spec", spec, "--mirror", new.url)
    assert code == 0, err
    assert f"resolved_commit = {moved.commit} (was {repo.commit})" in out
    assert lock_of(build)["pins"]["model"]["resolved_commit"] == moved.commit


def test_a_failed_download_leaves_the_lock_alone(repo, tmp_path, run_cli):
    build = make_build(run_cli, tmp_path, "http://127.0.0.1:9")  # nothing listens on the discard port
    before = (build / LOCK).read_bytes()
    code, _, err = run_cli("download", "--spec", str(build / "tqdeploy.toml"), "--retries", "0")
    assert code == 1 and "no mirror could list" in err
    assert (build / LOCK).read_bytes() == before


def test_offline_with_a_spec_checks_the_spec_target(repo, tmp_path, run_cli):
    with HubMirror(repo) as m:
        build = make_build(run_cli, tmp_path, m.url)
        assert run_cli("download", "--spec", str(build / "tqdeploy.toml"))[0] == 0
    (build / "models" / "org--tiny" / "config.json").unlink()
    code, out, _ = run_cli("download", "--spec", str(build / "tqdeploy.toml"), "--offline", "--json")
    assert code == 1 and json.loads(out)["missing"] == ["config.json"]


@pytest.mark.parametrize(
    "case, expected",
    [
        ("outside", "is relative to the build directory"),
        ("local-model", "there is nothing to download"),
        ("both", "give REPO[@REV] or --spec, not both"),
        ("verify", "--verify DIR takes no"),
        ("bad-lock", "not valid JSON"),
        ("lock-is-no-lock", "not a tqdeploy.lock/1 lock file"),
        ("missing-lock", "not found"),
        ("lock-folder", "is a folder without a tqdeploy.lock.json"),
    ],
)
def test_bad_spec_or_lock_input_is_one_line_exit_2(tmp_path, run_cli, case, expected):
    spec = tmp_path / "tqdeploy.toml"
    spec.write_text(spec_text(["http://127.0.0.1:9"]))
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "other.json").write_text('{"schema": "something-else"}')
    local = tmp_path / "local.toml"
    local.write_text(spec_text(["http://127.0.0.1:9"], model='path = "./models/tiny"'))
    args = {
        "outside": ["--spec", str(spec)],
        "local-model": ["--spec", str(local), "--to", str(tmp_path / "m")],
        "both": ["org/tiny", "--spec", str(spec)],
        "verify": ["--verify", str(tmp_path), "--spec", str(spec)],
        "bad-lock": ["org/tiny", "--lock", str(tmp_path / "broken.json"), "--to", str(tmp_path / "m")],
        "lock-is-no-lock": ["org/tiny@main", "--lock", str(tmp_path / "other.json"), "--to", str(tmp_path / "m")],
        "missing-lock": ["org/tiny@main", "--lock", str(tmp_path / "nope.json"), "--to", str(tmp_path / "m")],
        "lock-folder": ["org/tiny@main", "--lock", str(tmp_path), "--to", str(tmp_path / "m")],
    }[case]
    code, out, err = run_cli("download", *args)
    assert code == 2 and err.startswith("tqdeploy: error: ") and expected in err, err
    assert "Traceback" not in err and err.count("\n") == 2  # the error line and its fix
    if "lock" in case:  # the wrong file was passed: say which one to pass, not "rebuild"
        assert "fix: pass the tqdeploy.lock.json that `tqdeploy build` wrote" in err
    assert not (tmp_path / "m").exists() and not (tmp_path / "models").exists()


def test_a_build_writing_into_the_directory_is_waited_for(repo, tmp_path, run_cli, monkeypatch):
    import fcntl
    import threading

    from tqdeploy.download import buildlock

    with HubMirror(repo) as m:
        build = make_build(run_cli, tmp_path, m.url)
        spec = str(build / "tqdeploy.toml")
        fd = os.open(build, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # what `tqdeploy build` holds while it writes
            monkeypatch.setattr(buildlock, "BUILD_WAIT_S", 0.3)
            code, out, err = run_cli("download", "--spec", spec, "--json")
            assert code == 0 and json.loads(out)["lock"] is None, err
            assert any("kept" in e and "busy" in e for e in json.loads(out)["events"])
            assert "resolved_commit" not in lock_of(build)["pins"]["model"]
            monkeypatch.setattr(buildlock, "BUILD_WAIT_S", 30.0)
            threading.Timer(0.5, lambda: fcntl.flock(fd, fcntl.LOCK_UN)).start()  # the build finishes
            code, out, err = run_cli("download", "--spec", spec, "--json")
        finally:
            os.close(fd)
    assert code == 0 and json.loads(out)["lock"]["resolved_commit"] == repo.commit, err
