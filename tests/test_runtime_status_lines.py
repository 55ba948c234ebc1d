"""status's human view prints what the runtime says of its own extras (RuntimeFacts.lines), so the core names no
backend's keys (issue 36): a multi-node build's nodes and a container are each their backend's to describe."""

from __future__ import annotations

import io

from rich.console import Console

from tqdeploy.runtime.backends.multinode.nodes import node_lines
from tqdeploy.runtime.status import StatusResult

NODES = [
    {"rank": 0, "role": "leader", "pid": 101, "pgid": 101, "live": True, "log_path": "/b/.tqdeploy/logs/server.log"},
    {"rank": 1, "role": "worker", "pid": 202, "pgid": 202, "live": False, "log_path": "/b/.tqdeploy/logs/node1.log"},
]


def _shown(result: StatusResult) -> str:
    out = io.StringIO()
    result.render(Console(file=out, width=200, color_system=None))
    return out.getvalue()


def _result(lines: list[str]) -> StatusResult:
    data = {"state": "ready", "live": True, "phase": "ready", "pid": 101, "uptime_s": 3.0, "health": 200}
    return StatusResult("/b", data | {"processes": [], "nodes": NODES}, lines)


def test_the_multinode_runtime_describes_each_node_live_or_gone():
    assert node_lines(NODES) == [
        "node 0 (leader): live, pid 101, group 101, log /b/.tqdeploy/logs/server.log",
        "node 1 (worker): gone, pid 202, group 202, log /b/.tqdeploy/logs/node1.log",
    ]


def test_status_prints_the_runtime_lines_as_they_are_and_nothing_of_the_extras_itself():
    shown = _shown(_result([*node_lines(NODES), "[red]not markup[/red]"]))
    assert "node 1 (worker): gone, pid 202" in shown
    assert "[red]not markup[/red]" in shown  # a runtime's text is printed, never interpreted as markup
    assert "node 0" not in _shown(_result([]))  # the extras alone draw nothing: the runtime's lines do
