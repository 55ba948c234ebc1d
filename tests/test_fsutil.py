"""fsutil.exclusive_dir: the one lock on a build directory, held across real processes."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tqdeploy.errors import TQError
from tqdeploy.fsutil import exclusive_dir

_HOLDER = (
    "import sys; from pathlib import Path; from tqdeploy.fsutil import exclusive_dir\n"
    "with exclusive_dir(Path(sys.argv[1]), RuntimeError('busy')):\n"
    "    print('held', flush=True); sys.stdin.read()\n"
)


def test_second_holder_is_refused_then_admitted(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        busy = TQError(f"another tqdeploy build is writing into {tmp_path}")
        t0 = time.monotonic()
        with pytest.raises(TQError) as raised:
            with exclusive_dir(tmp_path, busy, wait_s=0.3, poll_s=0.05):
                pytest.fail("acquired a lock another process holds")
        assert raised.value is busy and time.monotonic() - t0 >= 0.3
    finally:
        holder.stdin.close()  # the holder leaves its with-block and exits: the lock is released
        assert holder.wait(timeout=30) == 0
    with exclusive_dir(tmp_path, RuntimeError("still busy")):
        pass
    assert list(tmp_path.iterdir()) == []  # a lock on the directory itself leaves no file behind
