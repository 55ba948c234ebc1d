"""The detached supervisor: `python -m tqdeploy.runtime.supervisor BUILD_DIR LOG -- COMMAND...`.

`up` starts it in a new session (so it leads a process group that also holds serve.sh's vLLM and the
EngineCore/Worker children) and returns once the server is ready; the supervisor stays, pumps vLLM's
stdout+stderr line by line into the stamped log (tqdeploy.runtime.logstamp) and records the child's pid,
exit code and exit time in state.json. SIGTERM/SIGINT (from `down`, which signals the whole group) do not
stop it: it keeps reading until vLLM's last shutdown line, so the log ends with what vLLM said.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from io import BufferedIOBase
from pathlib import Path

from tqdeploy.runtime.logstamp import stamp
from tqdeploy.runtime.state import update_state

# Set by `up`: the caller's own PYTHONPATH, restored for serve.sh (the supervisor's may point at tqdeploy).
CHILD_PYTHONPATH_ENV = "TQDEPLOY_CHILD_PYTHONPATH"
PROGRESS_EVERY_S = 10.0


def pump(stream: BufferedIOBase, log_path: Path) -> None:
    """Copy the child's output into the stamped log, one stamped line per output line.

    Progress bars (tqdm: CUDA graph capture, weight shards) redraw with \r and end their line only when
    done, which can take minutes; their latest state is written every PROGRESS_EVERY_S so that the log,
    and the stall detector reading it, sees the start-up moving.
    """
    pending = b""
    last_partial = time.monotonic()
    with open(log_path, "a", encoding="utf-8", errors="replace") as log:
        while chunk := stream.read1(65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                log.write(stamp(_last_redraw(raw), time.time()) + "\n")
            if b"\r" in pending and time.monotonic() - last_partial >= PROGRESS_EVERY_S:
                log.write(stamp(_last_redraw(pending), time.time()) + "\n")
                pending = pending[pending.rindex(b"\r") :]
                last_partial = time.monotonic()
            log.flush()
        if pending.strip():
            log.write(stamp(_last_redraw(pending), time.time()) + "\n")


def _last_redraw(raw: bytes) -> str:
    """A terminal shows the text after the last carriage return."""
    text = raw.decode("utf-8", errors="replace").rstrip("\r")
    return text.rsplit("\r", 1)[-1]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    original = env.pop(CHILD_PYTHONPATH_ENV, None)
    if original is not None:
        if original:
            env["PYTHONPATH"] = original
        else:
            env.pop("PYTHONPATH", None)
    return env


def run(build_dir: Path, log_path: Path, command: list[str]) -> int:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)  # outlive the group's SIGTERM; down SIGKILLs after its grace
    proc = subprocess.Popen(
        command,
        cwd=build_dir,
        env=child_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    update_state(build_dir, pid=proc.pid, supervisor_pid=os.getpid())
    reader = threading.Thread(target=pump, args=(proc.stdout, log_path), daemon=True)
    reader.start()
    code = proc.wait()
    update_state(build_dir, exit_code=code, exited_at=time.time())
    # Children (an orphaned EngineCore) may still hold the pipe: read on while they print.
    reader.join()
    return 0


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m tqdeploy.runtime.supervisor BUILD_DIR LOG -- COMMAND...", file=sys.stderr)
        return 2
    return run(Path(argv[0]), Path(argv[1]), argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
