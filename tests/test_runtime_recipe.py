"""docs/architecture.md "Add a runtime", followed on a copy of the package: one new folder
(runtime/backends/dummy/) and one registry line, then the real CLI's `up`, `status`, `logs`, `bundle` and `down`
run through it as subprocesses, none of them told its name but by `up --runtime dummy`."""

from __future__ import annotations

import json
import tarfile

from support.recipes import apply_recipe, recipe_blocks
from support.up_builds import assert_nothing_left, kill_leftovers, make_build, tq


def test_the_runtime_recipe_is_one_folder_and_one_registry_line():
    blocks = recipe_blocks("runtime")
    assert [(b.how, b.path) for b in blocks] == [
        ("file", "tool/tqdeploy/runtime/backends/dummy/__init__.py"),
        ("append", "tool/tqdeploy/runtime/registry.py"),
    ]
    assert blocks[1].text.count("\n") == 1  # one line


def test_up_status_logs_bundle_down_work_with_the_recipes_runtime(tmp_path):
    copy = apply_recipe("runtime", tmp_path / "copy")
    build, port = make_build(tmp_path / "demo", keyed=False)
    env = {"PYTHONPATH": str(copy)}
    try:
        rc, up, err = tq("up", str(build), "--runtime", "dummy", "--force", "--json", "--timeout", "60", extra_env=env)
        assert rc == 0 and up is not None and up["status"] == "ready", (up, err[-2000:])
        recorded = json.loads((build / ".tqdeploy" / "state.json").read_text())
        assert recorded["runtime"] == "dummy" and "backend" not in recorded  # a runtime that records nothing

        rc, now, err = tq("status", str(build), "--json", extra_env=env)
        assert rc == 0 and now is not None, err
        assert now["state"] == "ready" and now["runtime"] == "dummy" and now["served_models"] == ["tiny"]
        assert now["pid"] and now["pid"] in [p["pid"] for p in now["processes"]]  # the supervisor recorded it

        rc, _, printed = tq("logs", str(build), extra_env=env)
        assert rc == 0 and "GET /v1/models HTTP/1.1" in printed  # the server's own lines, through the supervisor

        archive = tmp_path / "b.tar.gz"
        rc, bundle, err = tq("bundle", str(build), "--out", str(archive), "--json", extra_env=env)
        assert rc == 0 and bundle is not None, err[-2000:]
        collectors = {c["name"]: c for c in bundle["collectors"]}
        assert collectors["state"]["status"] == "ok"
        assert "dummy runtime has nothing to record" in collectors["runtime"]["reason"]  # the default inspect
        with tarfile.open(archive) as tar:
            assert any(name.endswith("state.json") for name in tar.getnames())

        rc, down, err = tq("down", str(build), "--json", "--grace-period", "5", extra_env=env)
        assert rc == 0 and down is not None and down["status"] == "stopped", err
        assert down["port_free"] is True
        assert_nothing_left(build, recorded.get("pgid"), port)
        rc, after, _ = tq("status", str(build), "--json", extra_env=env)
        assert rc == 1 and after is not None and after["state"] == "stopped"
    finally:
        kill_leftovers(build)
