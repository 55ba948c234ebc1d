"""Run the real CLI with stderr on a pseudo-terminal, as a person at a terminal would see it."""

from __future__ import annotations

import os
import subprocess


def run_on_a_tty(cmd: list[str]) -> tuple[int, str]:
    """Run with stderr on a pseudo-terminal (as a person would see it); returns (code, stderr text)."""
    import pty
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave, env={**os.environ, "COLUMNS": "120"})
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
    proc.wait(timeout=30)
    os.close(master)
    return proc.returncode, b"".join(chunks).decode(errors="replace")
