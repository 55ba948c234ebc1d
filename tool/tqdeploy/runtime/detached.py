"""Start a keeper detached from the caller: its own session and process group, no stdin, its stderr in a file.

Every runtime that runs something on this host starts its keeper this way (the process runtime's supervisor, a
multi-node build's worker supervisors, the docker runtime's log pump): a new session, so `down` can signal the
whole group and the caller's Ctrl-C never reaches it; close_fds, so it inherits no lock of `up`'s (the start lock
ends with the `up` process).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import tqdeploy
from tqdeploy.runtime.folderid import MARKER_ENV, deployment_marker


def spawn_detached(
    argv: list[str], env: dict[str, str], err_path: Path, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """argv in a new session, stdout and stderr appended to err_path (what a keeper says before its log exists)."""
    with open(err_path, "ab") as err:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            start_new_session=True,
            close_fds=True,
        )


def tqdeploy_root() -> str:
    """The folder tqdeploy imports from (its parent): a keeper started with `python -m tqdeploy...` needs it."""
    return str(Path(tqdeploy.__file__).resolve().parents[1])


def keeper_env(build_dir: Path) -> dict[str, str]:
    """A keeper's environment: the caller's, the deployment marker (how `down` proves it is the deployment's), and
    tqdeploy importable from where this process imported it."""
    env = dict(os.environ)
    env[MARKER_ENV] = deployment_marker(Path(build_dir).resolve())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (tqdeploy_root(), os.environ.get("PYTHONPATH", "")) if p)
    return env
