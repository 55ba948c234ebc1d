"""Run the real CLI with one stream on a pseudo-terminal, as a person at a terminal would see it."""

from __future__ import annotations

import os
import subprocess


def run_on_a_tty(
    cmd: list[str], stream: str = "stderr", env: dict[str, str] | None = None, timeout: float = 30
) -> tuple[int, str]:
    """Run with ``stream`` (stderr or stdout) on a pseudo-terminal, the other discarded; returns (code, text).
    COLUMNS is 120 unless ``env`` sets it."""
    import pty
    import select

    master, slave = pty.openpty()
    sink = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, stream: slave}
    env = {**os.environ, "COLUMNS": "120", **(env or {})}
    proc = subprocess.Popen(cmd, stdout=sink["stdout"], stderr=sink["stderr"], env=env)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=timeout)
    os.close(master)
    return proc.returncode, b"".join(chunks).decode(errors="replace")
