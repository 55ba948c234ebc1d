"""A build folder removed and built again while its server runs (issue 35): the server is still the deployment's.

The deployment is found by the build's identity (the marker its processes carry: the folder's resolved path), not
by the folder's inode: `up` there refuses to start beside the old server and names `down --force`, which finds and
stops it. The server is test_hostile_procs' stand-in (the real `up` path, its vLLM swapped for a small server).
"""

from __future__ import annotations

import shutil

from hostile.test_hostile_procs import needs_vllm_python, standin_build
from support.up_builds import assert_nothing_left, kill_leftovers, live_members, tq


@needs_vllm_python
def test_identity_a_rebuilt_folder_finds_and_stops_its_old_server(tmp_path):
    build, port = standin_build(tmp_path / "demo")
    pristine = tmp_path / "pristine"
    shutil.copytree(build, pristine, symlinks=True)
    try:
        rc, up, out = tq("up", str(build), "--json", "--force", timeout=180)
        assert rc == 0 and up["status"] == "ready", out[-2000:]
        shutil.rmtree(build)  # removed while it serves, then built again at the same path
        shutil.copytree(pristine, build, symlinks=True)
        assert live_members(build), "the old server is still this build's by its marker"
        rc, st, out = tq("status", str(build), "--json", timeout=60)
        assert rc == 1 and st["state"] == "unrecorded" and st["findings"][0]["id"] == "TQ414", out[-1500:]
        assert up["pid"] in [p["pid"] for p in st["processes"]]
        rc, again, out = tq("up", str(build), "--json", "--force", timeout=120)
        assert rc == 1 and again["status"] == "refused", out[-2000:]
        refusal = next(f for f in again["findings"] if f["id"] == "TQ414")
        assert "down --force" in refusal["remediation"] and refusal["evidence"]["processes"]
        rc, down, out = tq("down", str(build), "--json", "--force", "--grace-period", "5", timeout=60)
        assert rc == 0 and down["status"] == "stopped" and down["left"] == [], out[-2000:]
        assert up["pid"] in [p["pid"] for p in down["stopped"]]
        assert_nothing_left(build, up["pgid"], port)
    finally:
        kill_leftovers(build)
