"""Runtimes behind one interface (runtime/base.py), chosen from one registry (runtime/registry.py).

A new runtime is one module plus one registry line: support/dummy_runtime.py is registered here and the
real `up`, `status` and `down` run through it (pre-flight, state, readiness, the marker sweep, the port
check), without any of them knowing its name. The typed state record keeps statefields' validation.
"""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from support.up_builds import assert_nothing_left, kill_leftovers, make_build
from tqdeploy.errors import TQError
from tqdeploy.runtime import base, registry, state
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.statefields import CHECKS

DUMMY = "support.dummy_runtime:DummyRuntime"
INTERFACE = ("name", "start_options", "prepare", "start", "stop", "is_live", "facts", "inspect", "logs", "adopts")


@pytest.fixture
def dummy(monkeypatch):
    monkeypatch.setitem(registry.RUNTIMES, "dummy", DUMMY)  # the one registry line


def test_every_registered_runtime_implements_the_whole_interface():
    protocol = {n for n in vars(base.Runtime) if not n.startswith("_")} | set(base.Runtime.__annotations__)
    assert protocol == set(INTERFACE)  # the documented interface is the one the Protocol declares
    for name in registry.names():
        cls = registry.runtime_class(name)
        assert cls.name == name
        missing = [m for m in INTERFACE if not hasattr(cls, m)]
        assert not missing, f"{name} lacks {missing}"


def test_up_status_down_run_through_a_runtime_registered_with_one_line(dummy, tmp_path):
    from tqdeploy.runtime import down, status, up

    build, port = make_build(tmp_path / "demo", keyed=False)
    try:
        result = up(build, runtime="dummy", timeout=60, stall_timeout=30, force=True)
        assert result.status == "ready", [f.to_dict() for f in result.findings]
        assert result.runtime == "dummy" and result.seconds_to_ready is not None
        assert result.doctor is None and "TQ417" not in [f.id for f in result.findings]  # no doctor passed in
        recorded = json.loads(state.state_path(build).read_text())
        assert recorded["runtime"] == "dummy" and recorded["pid"] == recorded["supervisor_pid"]
        assert recorded["ready"] is True and "python" not in recorded  # the process runtime's field: not its

        now = status(build)
        assert now.exit_code == 0 and now.data["state"] == "ready" and now.data["health"] == 200
        assert now.data["runtime"] == "dummy" and now.data["container"] == {"dummy": True}
        assert [p["pid"] for p in now.data["processes"]] == [recorded["pid"]]
        assert now.data["served_models"] == [result.served_model_name]
        assert "Starting vLLM server on" in state.current_log(build).read_text()

        again = up(build, runtime="dummy", timeout=60, force=True)  # the runtime says it is live: refused
        assert again.status == "refused" and [f.id for f in again.findings] == ["TQ414"]

        stopped = down(build, timeout=5)
        assert stopped.status == "stopped" and stopped.report is not None
        assert [p["pid"] for p in stopped.report.found] == [recorded["pid"]]
        assert stopped.report.port_free is True and stopped.exit_code == 0
        assert_nothing_left(build, recorded["pgid"], port)
        after = status(build)
        assert after.data["state"] == "stopped" and not after.data["live"] and after.exit_code == 1
    finally:
        kill_leftovers(build)


def test_the_state_names_only_registered_runtimes(dummy, tmp_path, monkeypatch):
    state.new_state(tmp_path, runtime="dummy", port=8000)
    assert state.read_record(tmp_path).runtime == "dummy"
    monkeypatch.delitem(registry.RUNTIMES, "dummy")
    with pytest.raises(state.CorruptState, match="field runtime = 'dummy' must be one of docker, multinode, process"):
        state.read_record(tmp_path)


def test_up_names_the_registered_runtimes_and_which_take_an_image(dummy):
    from tqdeploy.commands.up import _check_runtime

    with pytest.raises(TQError) as err:
        _check_runtime("ssh", None)
    assert (
        err.value.remediation == "use --runtime process or --runtime docker or --runtime multinode or --runtime dummy"
    )
    with pytest.raises(TQError) as err:
        _check_runtime("dummy", "img:1")
    assert err.value.message == "--image is for the docker runtime"
    assert err.value.remediation == "add --runtime docker, or drop --image"
    _check_runtime("docker", "img:1")  # accepted
    _check_runtime("dummy", None)


def test_down_force_without_a_state_falls_back_to_the_default_runtime(dummy, tmp_path, monkeypatch):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    picked = registry.for_orphans(tmp_path)
    docker_adopts = registry.runtime_class("docker").adopts(tmp_path)
    assert type(picked).__name__ == ("DockerRuntime" if docker_adopts else "ProcessRuntime")


def test_the_record_holds_every_checked_field_and_gives_back_what_read_state_does(tmp_path):
    names = {f.name for f in dataclasses.fields(StateRecord)} - {"present"}
    assert names == set(CHECKS)  # a field validated is a field typed, and the other way round
    written = state.new_state(tmp_path, port=8000, pid=12, started_at=time.time(), last_error=None)
    record = state.read_record(tmp_path)
    assert record.to_json() == state.read_state(tmp_path) == written
    assert record.pid == 12 and record.port == 8000 and record.exit_code is None
    assert "exit_code" not in record.to_json()  # absent stays absent


def test_a_runtime_stands_in_for_another_on_its_own_kind_of_build(tmp_path):
    """`up` names no runtime: for a build with multinode.json, multinode stands in for process (registry.for_start)."""
    assert type(registry.for_start("process", tmp_path)).__name__ == "ProcessRuntime"
    (tmp_path / "multinode.json").write_text("{}")
    assert type(registry.for_start("process", tmp_path)).__name__ == "MultinodeRuntime"
    assert type(registry.for_start("docker", tmp_path)).__name__ == "DockerRuntime"  # stands in for process only
