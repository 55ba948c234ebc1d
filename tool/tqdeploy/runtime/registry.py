"""Which runtimes exist: one line each, name -> "module:Class" (the interface: runtime/base.py).

Like SkyPilot's sky/provision/__init__.py routing each call to a provider module, every command picks its
runtime here: `up --runtime NAME`, and `down`/`status`/`logs` by the name state.json records. Import-light:
the modules load only when a runtime is used (`tqdeploy --help` and statefields import this one).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tqdeploy.runtime.base import Runtime

DEFAULT = "process"
RUNTIMES: dict[str, str] = {
    "process": "tqdeploy.runtime.process_runtime:ProcessRuntime",
    "docker": "tqdeploy.runtime.docker_runtime:DockerRuntime",
    # A multi-node build on one host; `up` picks it for a build with multinode.json (runtime/multinode.py).
    "multinode": "tqdeploy.runtime.multinode:MultinodeRuntime",
}


def names() -> tuple[str, ...]:
    return tuple(RUNTIMES)


def runtime_class(name: str) -> type[Runtime]:
    """The class registered under name; KeyError for a name not registered (callers say which exist)."""
    module, _, attr = RUNTIMES[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def for_start(name: str, build_dir: Path) -> Runtime:
    """The runtime `up --runtime NAME` starts BUILD_DIR with: NAME's, or a registered one that stands in for it on
    such a build (its class names `stands_in_for = NAME` and its `takes(build_dir)` says yes: multinode for a
    build with multinode.json, asked for the process runtime)."""
    for other in RUNTIMES:
        cls = runtime_class(other)
        if getattr(cls, "stands_in_for", None) == name and cls.takes(build_dir):  # type: ignore[attr-defined]
            return cls()
    return get(name)


def get(name: str | None) -> Runtime:
    """The runtime a state names (None: a state written before the field existed is the default's)."""
    return runtime_class(name or DEFAULT)()


def for_orphans(build_dir: Path) -> Runtime:
    """`down --force` without a state that names a runtime: the first non-default runtime that may have left
    something in build_dir (docker: an engine answers here), else the default (its marker sweep finds the
    processes of any runtime: they all carry the marker)."""
    for name in RUNTIMES:
        if name != DEFAULT and runtime_class(name).adopts(build_dir):
            return get(name)
    return get(DEFAULT)
