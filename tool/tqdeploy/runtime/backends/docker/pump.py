"""The docker runtime's detached log pump: `python -m tqdeploy.runtime.backends.docker.pump BUILD_DIR LOG CONTAINER_ID`.

The counterpart of the supervisor for a container: it follows the container's output through the Docker
SDK, stamps each line into the same log format, and records the container's exit code in state.json.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from tqdeploy.adaptors import docker
from tqdeploy.runtime.logstamp import stamp
from tqdeploy.runtime.state import update_state


def run(build_dir: Path, log_path: Path, container_id: str) -> int:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)  # read on until the container's last line
    client = docker.from_env(timeout=None)  # no read timeout: the container's output may pause for minutes
    container = client.containers.get(container_id)
    pending = b""
    with open(log_path, "a", encoding="utf-8", errors="replace") as log:
        for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=True):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                text = raw.decode("utf-8", errors="replace").rstrip("\r").rsplit("\r", 1)[-1]
                log.write(stamp(text, time.time()) + "\n")
            log.flush()
        if pending.strip():
            log.write(stamp(pending.decode("utf-8", errors="replace"), time.time()) + "\n")
    try:
        code = container.wait(timeout=30)["StatusCode"]
    except Exception:  # removed meanwhile
        code = None
    update_state(build_dir, exit_code=code, exited_at=time.time())
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: python -m tqdeploy.runtime.backends.docker.pump BUILD_DIR LOG CONTAINER_ID", file=sys.stderr)
        sys.exit(2)
    sys.exit(run(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]))
