"""Writes outside the build (issue 35): every folder tqdeploy writes under BUILD/.tqdeploy is a folder of the build
itself, checked by one helper (buildfolder.own_dir) that `up`, the state, the logs and the multi-node workers use.

A link planted in place of such a folder points at a folder outside the build; nothing may appear there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hostile.test_hostile_procs import needs_vllm_python, standin_build
from support.up_builds import kill_leftovers, live_members, tq
from tqdeploy.buildfolder import own_dir
from tqdeploy.deployspec import load_spec
from tqdeploy.errors import TQError
from tqdeploy.render.files import render_files
from tqdeploy.runtime.backends.multinode import nodes as multinode

MULTINODE_SPEC = Path(__file__).resolve().parents[2] / "scripts" / "multinode" / "tiny-cpu-multinode.toml"


def _planted(build: Path, rel: str, outside: Path) -> None:
    link = build / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    outside.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)


def test_writes_a_two_node_build_with_a_linked_nodes_folder_writes_nothing_there(tmp_path):
    build = tmp_path / "build"
    for rel, f in render_files(load_spec(MULTINODE_SPEC)).items():
        (build / rel).parent.mkdir(parents=True, exist_ok=True)
        (build / rel).write_bytes(f.data)
    outside = tmp_path / "elsewhere"
    _planted(build, ".tqdeploy/nodes", outside)
    record = json.loads((build / "multinode.json").read_text())
    (build / ".tqdeploy" / "logs").mkdir()
    with pytest.raises(TQError, match="is a symlink"):
        multinode.start_workers(build, dict(os.environ), record)
    with pytest.raises(TQError, match="is a symlink"):
        multinode._write_record(build, 1, {"rank": 1})
    assert list(outside.iterdir()) == []  # no node folder, no worker record at the link's target


def test_writes_own_dir_follows_no_link_below_the_build_but_takes_a_linked_build(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    assert own_dir(alias, ".tqdeploy/logs") == real / ".tqdeploy" / "logs"  # the build itself may be a link
    (real / ".tqdeploy" / "bin").write_text("a file")
    with pytest.raises(TQError, match="not a folder"):
        own_dir(real, ".tqdeploy/bin")
    with pytest.raises(TQError, match="outside the build"):
        own_dir(real, tmp_path / "other")


@needs_vllm_python
def test_writes_up_refuses_a_linked_logs_folder_before_starting(tmp_path):
    build, _ = standin_build(tmp_path / "demo")
    outside = tmp_path / "elsewhere"
    _planted(build, ".tqdeploy/logs", outside)
    try:
        rc, _, err = tq("up", str(build), "--force", timeout=120)
        assert rc == 2 and "is a symlink" in err and "Traceback" not in err, err[-1500:]
        assert len([line for line in err.splitlines() if line.startswith("tqdeploy: error:")]) == 1
        assert list(outside.iterdir()) == [] and live_members(build) == []
    finally:
        kill_leftovers(build)
