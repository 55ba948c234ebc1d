"""Which runtimes exist: one line each, name -> "module:Class" (the interface: runtime/base.py).

Like SkyPilot's sky/provision/__init__.py routing each call to a provider module, every command picks its
runtime here: `up --runtime NAME`, and `down`/`status`/`logs` by the name state.json records. Each runtime is a
package runtime/backends/<name>/ (runtime/base.py). The table is a plug-in table, so a backend loads only when it
is used (statefields validates the state's runtime name with it without loading any).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from tqdeploy.runtime.interface import Runtime

DEFAULT = "process"
RUNTIMES: dict[str, str] = {
    "process": "tqdeploy.runtime.backends.process:ProcessRuntime",
    "docker": "tqdeploy.runtime.backends.docker:DockerRuntime",
    # A multi-node build on one host; `up` picks it for a build with multinode.json (its takes()).
    "multinode": "tqdeploy.runtime.backends.multinode:MultinodeRuntime",
}


def names() -> tuple[str, ...]:
    return tuple(RUNTIMES)


def runtime_class(name: str) -> type[Runtime]:
    """The class registered under name; KeyError for a name not registered (callers say which exist)."""
    module, _, attr = RUNTIMES[name].partition(":")
    cls: type[Runtime] = getattr(importlib.import_module(module), attr)  # the one dynamic lookup: the table's
    return cls


def for_start(name: str, build_dir: Path) -> Runtime:
    """The runtime `up --runtime NAME` starts BUILD_DIR with: NAME's, or a registered one that stands in for it on
    such a build (its class declares `stands_in_for = NAME` and its `takes(build_dir)` says yes: multinode for a
    build with multinode.json, asked for the process runtime)."""
    for other in RUNTIMES:
        cls = runtime_class(other)
        if cls.stands_in_for == name and cls.takes(build_dir):
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
