"""Runtimes behind one interface (runtime/base.py), chosen from one registry (runtime/registry.py).

A new runtime is one module plus one registry line: support/dummy_runtime.py is registered here and the
real `up`, `status` and `down` run through it (pre-flight, state, readiness, the marker sweep, the port
check), without any of them knowing its name (the one-folder variant: tests/test_runtime_recipe.py). Every optional
capability is a declared member with a default (runtime/base.py); each runtime validates its own section of the
state; the typed state record keeps statefields' validation and reads the states older versions wrote.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import time
from pathlib import Path

import pytest

from support.up_builds import assert_nothing_left, kill_leftovers, make_build
from tqdeploy.errors import TQError
from tqdeploy.runtime import base, registry, state
from tqdeploy.runtime.record import StateRecord
from tqdeploy.runtime.statefields import CHECKS

DUMMY = "support.dummy_runtime:DummyRuntime"
INTERFACE = (
    *("name", "start_options", "state_type", "stands_in_for", "takes", "adopts"),
    *("prepare", "preflight", "start", "failed", "is_live", "facts", "other_groups", "stop", "inspect", "logs"),
)
RUNTIME = Path(__file__).resolve().parents[1] / "tool" / "tqdeploy" / "runtime"


@pytest.fixture
def dummy(monkeypatch):
    monkeypatch.setitem(registry.RUNTIMES, "dummy", DUMMY)  # the one registry line


def test_every_registered_runtime_implements_the_whole_interface():
    protocol = {n for n in vars(base.Runtime) if not n.startswith("_")} | set(base.Runtime.__annotations__)
    assert protocol == set(INTERFACE)  # the documented interface is the one the Protocol declares
    for name in registry.names():
        cls = registry.runtime_class(name)
        assert cls.name == name and issubclass(cls, base.RuntimeBase)  # every default comes from the one base
        missing = [m for m in INTERFACE if not hasattr(base.RuntimeBase, m) and m != "name"]
        assert not missing, f"RuntimeBase gives no default for {missing}"


def test_no_getattr_probing_and_nothing_outside_a_backend_names_one():
    """The issue's leaks, read from the source: no getattr for a capability in runtime/, and no module outside
    runtime/backends/ imports a backend or names one of their files (multinode.json, a container)."""
    names = [n for n in registry.names() if n != registry.DEFAULT]
    for path in sorted(RUNTIME.rglob("*.py")):
        text = path.read_text()
        calls = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)]
        getattrs = [c for c in calls if isinstance(c.func, ast.Name) and c.func.id in ("getattr", "hasattr")]
        probes = [c.lineno for c in getattrs if isinstance(c.args[1], ast.Constant) and c.args[1].value in INTERFACE]
        assert not probes, f"{path}:{probes} probes a runtime for a capability"
        if "backends" in path.parts:
            continue
        tree = ast.parse(text)
        imports = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [i.module for i in imports if "backends" in (i.module or "")], path
        if path.name == "registry.py":
            continue
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}  # docstrings may give examples
        code = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in docs]
        # the backends' own state and status keys too: the core prints what a runtime hands it (RuntimeFacts.lines)
        own = ("container_id", "container", "nodes", *names)
        words = [w for w in code if isinstance(w, str) and ("multinode.json" in w or w in own)]
        assert not words, f"{path} names {words}"


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
        assert recorded["ready"] is True and "backend" not in recorded  # it records nothing of its own

        now = status(build)
        assert now.exit_code == 0 and now.data["state"] == "ready" and now.data["health"] == 200
        assert now.data["runtime"] == "dummy" and now.data["dummy"] == {"keeper": recorded["supervisor_pid"]}
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
    names = {f.name for f in dataclasses.fields(StateRecord)} - {"present", "unknown", "backend"}
    assert names == set(CHECKS) == StateRecord.shared_fields()  # a field validated is a field typed, and back
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


def _plant(build, **fields):
    state.state_path(build).parent.mkdir(parents=True, exist_ok=True)
    data = {"schema": state.SCHEMA, "marker": state.deployment_marker(build), "port": 8000} | fields
    state.state_path(build).write_text(json.dumps(data))


def test_each_runtime_reads_its_own_section_and_the_flat_fields_older_versions_wrote(tmp_path):
    from tqdeploy.runtime.backends.docker import DockerState
    from tqdeploy.runtime.backends.process.section import ProcessState, previous_python

    _plant(tmp_path, runtime="process", python="/usr/bin/python3", container_id=None)  # as the landed main wrote
    old = state.read_record(tmp_path)
    assert old.backend == ProcessState("/usr/bin/python3") and old.unknown == ()  # a null loses nothing
    assert previous_python(old, tmp_path) == "/usr/bin/python3"
    assert old.to_json()["backend"] == {"python": "/usr/bin/python3"} and "python" not in old.to_json()
    _plant(tmp_path, runtime="docker", container_id="ab" * 6)
    assert state.read_record(tmp_path).backend == DockerState("ab" * 6)
    _plant(tmp_path, runtime="docker", backend={"container_id": "cd" * 6})
    assert state.read_record(tmp_path).backend == DockerState("cd" * 6)
    state.update_state(tmp_path, phase="stopped")  # a write migrates the file to the section
    assert json.loads(state.state_path(tmp_path).read_text())["backend"] == {"container_id": "cd" * 6}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"runtime": "docker", "backend": {"container_id": "$(reboot)"}},
            "container_id = '$(reboot)' must be a Docker",
        ),
        ({"runtime": "docker", "container_id": 5}, "of the docker runtime: container_id = 5 must be"),
        ({"runtime": "docker", "backend": {"image": "x"}}, "'image' is not a field of this runtime's section"),
        ({"runtime": "process", "backend": []}, "field backend = [] must be an object"),
        ({"runtime": "process", "backend": {"python": "a\0b"}}, "python = 'a\\x00b' must be a path"),
        ({"runtime": "multinode", "backend": {"container_id": "ab" * 6}}, "(it holds python)"),
    ],
)
def test_a_section_holding_what_its_runtime_never_writes_is_refused(tmp_path, fields, message):
    _plant(tmp_path, **fields)
    with pytest.raises(state.CorruptState) as err:
        state.read_record(tmp_path)
    assert message in err.value.message and "\n" not in err.value.message


def test_unknown_top_level_fields_are_reported_by_status_never_handed_on(tmp_path):
    from tqdeploy.runtime import status

    _plant(tmp_path, runtime="process", from_a_newer_version={"x": 1}, container_id="ab" * 6)
    record = state.read_record(tmp_path)
    assert record.unknown == ("'container_id'", "'from_a_newer_version'")  # not the process runtime's field
    assert "from_a_newer_version" not in record.to_json()
    shown = status(tmp_path, probe=False).data
    assert shown["unknown_state_fields"] == list(record.unknown) and shown["state"] == "exited"


def test_status_down_and_up_load_the_state_once(dummy, tmp_path, monkeypatch):
    """Issue 36 item 4: a command reads and trusts state.json once and carries the record. The other reads are
    where a keeper may have written: the merge under the lock of each update_state, and up's readiness polls."""
    from tqdeploy.runtime import down, status, up

    reads: list[str] = []
    parse = state.parsed_record

    def counted(data, build_dir):
        readers = ("read_record", "read_state")  # the readers themselves: the caller is who read
        reads.append(next(f.function for f in inspect.stack()[1:] if f.function not in readers))
        return parse(data, build_dir)

    monkeypatch.setattr(state, "parsed_record", counted)
    build, port = make_build(tmp_path / "demo", keyed=False)
    try:
        assert up(build, runtime="dummy", timeout=60, force=True).status == "ready"
        assert down(build, timeout=5).status == "stopped"
        reads.clear()
        assert status(build).data["state"] == "stopped" and reads == ["status"]
        reads.clear()
        again = up(build, runtime="dummy", timeout=60, force=True)
        assert again.status == "ready"
        merges = ["update_state"] * 2  # start fields, then ready: each a locked read-modify-write
        assert [r for r in reads if r not in ("_ended",)] == ["_up", *merges], reads  # _ended: the polls
        reads.clear()
        assert status(build).data["state"] == "ready" and reads == ["status"]
        reads.clear()
        assert down(build, timeout=5).status == "stopped" and reads == ["down", "update_state"]
    finally:
        kill_leftovers(build)
