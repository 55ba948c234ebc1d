"""`tqdeploy build` creates the API key file a keyed spec names (render/apikey.py): a random key, mode 0600 in a
0700 folder, said where in one line, never printed, never in the lock, never replaced once it exists."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from tqdeploy.safeio import read_key_file

KEY = Path("secrets") / "vllm-api-key"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_build_creates_a_random_key_file_once_and_never_prints_it(run_cli, tmp_path):
    out = tmp_path / "demo"
    code, stdout, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out))
    assert code == 0, err
    key_file = out / KEY
    key = read_key_file(key_file)  # one printable line: what serve.sh, connect and up read
    assert len(key) >= 40 and _mode(key_file) == 0o600 and _mode(out / "secrets") == 0o700
    assert f"created the API key file {key_file} (mode 0600)" in stdout
    assert key not in stdout + err
    lock = json.loads((out / "tqdeploy.lock.json").read_text())
    assert not any(p.startswith("secrets") for p in lock["files"]), lock["files"]  # the user's data, not a build's

    code, stdout, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out), "--json")
    assert code == 0, err
    assert json.loads(stdout)["api_key_file"] == {"path": str(key_file), "status": "present"}
    assert key not in stdout + err and read_key_file(key_file) == key  # not replaced by the rebuild
    assert run_cli("build", "--check", str(out))[0] == 0
    code, stdout, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--check", str(out), "--json")
    assert code == 0 and json.loads(stdout)["stale"] == [], stdout + err

    other = tmp_path / "other"  # a second build gets its own key
    assert run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(other))[0] == 0
    assert read_key_file(other / KEY) != key


def test_an_existing_key_file_is_kept_even_with_force(run_cli, tmp_path):
    out = tmp_path / "demo"
    (out / "secrets").mkdir(parents=True)
    (out / KEY).write_text("sk-the-users-own-key\n")
    (out / KEY).chmod(0o640)
    code, stdout, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out), "--force")
    assert code == 0, err
    assert (out / KEY).read_text() == "sk-the-users-own-key\n" and _mode(out / KEY) == 0o640
    assert "sk-the-users-own-key" not in stdout + err
    assert f"API key file {out / KEY}: present, kept" in stdout and f"chmod 600 {out / KEY}" in stdout


def test_dry_run_creates_nothing_and_says_what_a_build_would(run_cli, tmp_path):
    out = tmp_path / "demo"
    code, stdout, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(out), "--dry-run")
    assert code == 0
    assert not out.exists()
    assert f"note: a build would create the API key file {out / KEY} (mode 0600)" in err


def test_a_key_path_leading_out_of_the_build_is_not_created(run_cli, tmp_path):
    from tqdeploy.deployspec.load import embedded_spec_path

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    text = embedded_spec_path("tiny-cpu-demo").read_text()
    spec = tmp_path / "up.toml"
    spec.write_text(text.replace("./secrets/vllm-api-key", "../stray-key"))
    code, stdout, err = run_cli("build", str(spec), "--out", str(tmp_path / "a"))
    assert code == 0, err
    assert not (tmp_path / "stray-key").exists()
    assert "not created: it lies outside the build directory" in stdout

    b = tmp_path / "b"  # secrets/ is a link to a folder outside the build: nothing is written through it
    b.mkdir()
    (b / "secrets").symlink_to(outside)
    code, stdout, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(b))
    assert code == 0, err
    assert os.listdir(outside) == [] and "not created" in stdout

    c = tmp_path / "c"  # a dangling link where the key goes: left as it is, not followed
    (c / "secrets").mkdir(parents=True)
    (c / KEY).symlink_to(outside / "target")
    code, stdout, err = run_cli("build", "--embedded", "tiny-cpu-demo", "--out", str(c))
    assert code == 0, err
    assert (c / KEY).is_symlink() and not (outside / "target").exists()


def test_an_unkeyed_spec_gets_no_key_file(run_cli, tmp_path):
    from tqdeploy.deployspec.load import embedded_spec_path

    spec = tmp_path / "unkeyed.toml"
    spec.write_text(
        embedded_spec_path("tiny-cpu-demo").read_text().replace('api_key_file = "./secrets/vllm-api-key"\n', "")
    )
    code, stdout, err = run_cli("build", str(spec), "--out", str(tmp_path / "b"), "--json")
    assert code == 0, err
    assert json.loads(stdout)["api_key_file"] is None and not (tmp_path / "b" / "secrets").exists()
