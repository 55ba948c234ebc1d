"""Prove a stopped multi-node deployment left nothing: no process carrying its marker (TQDEPLOY_DEPLOYMENT, which
every process of it inherits, `VLLM::` children included: setproctitle changes the title, not the environment),
and no Ray process at all (raylet, gcs_server, `ray::`), which a multi-node build must not start.

    .venv/bin/python scripts/multinode/leftovers.py BUILD_DIR    # exit 0: nothing left; 1: each one printed
"""

from __future__ import annotations

import sys
from pathlib import Path

from tqdeploy.runtime.procs import has_marker, live_procs
from tqdeploy.runtime.state import deployment_marker

RAY_TITLES = ("raylet", "gcs_server", "ray::")


def leftovers(build_dir: Path) -> list[str]:
    marker = deployment_marker(build_dir)
    found = []
    for proc in live_procs():
        if proc.state == "Z":
            continue
        ray = any(t in proc.title for t in RAY_TITLES)
        if ray or has_marker(proc.pid, marker):
            found.append(f"pid {proc.pid} pgid {proc.pgid} {proc.title!r}" + (" (Ray)" if ray else ""))
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    found = leftovers(Path(argv[0]).resolve())
    for line in found:
        print("left:", line)
    if not found:
        print("nothing left: no process with the deployment's marker, no raylet, gcs_server or ray:: process")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
