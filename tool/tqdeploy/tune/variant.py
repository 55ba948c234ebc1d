"""One candidate dtype started through the build's own runtime, and stopped whatever happens.

The copy: BUILD/.tqdeploy/tune/<dtype>/ holds the build's spec with only kv_cache_dtype and the port changed
(answers/record.py's reference spec: absolute model and key paths, loopback), rendered by `tqdeploy build`, then
`tqdeploy up --no-check --json` and `tqdeploy down`, the same contract `check --record-reference` and
`profile --start` drive. The copy uses the build's own caches (VLLM_CACHE_ROOT, HF_HOME) unless the caller set
them: a candidate after the first, and every re-run, starts warm (vLLM keys its compile cache by the config, the
KV dtype included, so candidates never read each other's graphs).

Ctrl-C or SIGTERM: `up` runs in a session of its own, so a terminal's SIGINT reaches tune only; tune sends `up`
SIGTERM (which it handles as Ctrl-C: it stops what it started, runtime/interrupt.py), waits for it, then runs
`down` with both signals ignored.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdeploy.answers.record import _free_port, _last_line, _reference_spec
from tqdeploy.buildfolder import folder, own_dir
from tqdeploy.errors import TQError
from tqdeploy.fsutil import atomic_write_text
from tqdeploy.runtime.interrupt import ignored

UP_TIMEOUT_S = 900
UP_GRACE_S = 60  # past up's own --timeout: it reports and stops before this process gives up on it
DOWN_TIMEOUT_S = 120
INTERRUPT_WAIT_S = 120  # what `up` may take to stop after SIGINT (the engine's process group)
OUTPUT_LIMIT = 1 << 20


@dataclass
class Started:
    build: Path  # the copy
    base_url: str
    model: str
    seconds_to_ready: float | None
    log_path: Path | None


class StartFailed(Exception):
    """`up` did not bring the copy up: its reason and findings (TQ4xx) for the candidate's row."""

    def __init__(self, why: str, findings: list[dict[str, Any]]):  # findings as `up --json` printed them
        super().__init__(why)
        self.why = why
        self.findings = findings


def _cli() -> list[str]:
    return [sys.executable, "-m", "tqdeploy"]


def variant_dir(build: Path, dtype: str) -> Path:
    return own_dir(build, folder(build).state_dir / "tune" / dtype)


def prepare(build: Path, dtype: str) -> Path:
    """Render the copy for `dtype` (again each time: the build's spec may have changed); its build folder."""
    where = variant_dir(build, dtype)
    spec = where / "spec.toml"
    header = f"tqdeploy tune's copy of {build}: kv_cache_dtype {dtype}, another port; nothing else changed"
    atomic_write_text(spec, _reference_spec(build, _free_port(), dtype, header))
    out = where / "build"
    made = subprocess.run(
        [*_cli(), "build", str(spec), "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if made.returncode != 0:
        raise StartFailed(f"building the {dtype} copy failed: {_last_line(made)}", [])
    return out


def caches_env(build: Path) -> dict[str, str]:
    """The build's own caches for the copy (process runtime: process launch.serve_env), unless set."""
    where = folder(build)
    env = dict(os.environ)
    for name, path in (("VLLM_CACHE_ROOT", where.vllm_cache), ("HF_HOME", where.hf_home)):
        env.setdefault(name, str(own_dir(build, path)))
    return env


def stop(copy: Path) -> None:
    with ignored():  # the clean-up after Ctrl-C runs to its end: a second one would leave the engine running
        subprocess.run([*_cli(), "down", str(copy)], capture_output=True, text=True, timeout=DOWN_TIMEOUT_S)


def start(build: Path, copy: Path, log: Path) -> Started:
    """`up` the copy; StartFailed with up's reason; on Ctrl-C, up is told, waited for, and the copy is downed."""
    argv = [*_cli(), "up", str(copy), "--no-check", "--json", "--timeout", str(UP_TIMEOUT_S)]
    # up's progress lines: kept beside the copy, never on tune's own output; a link planted there is not followed
    try:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        raise TQError(f"cannot write {log}: {exc.strerror or exc}", f"remove {log} (tune writes it again)") from None
    with os.fdopen(fd, "wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=caches_env(build), start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=UP_TIMEOUT_S + UP_GRACE_S)
        except BaseException:  # Ctrl-C, SIGTERM or our own timeout: up stops what it started, then down makes sure
            with ignored():
                # SIGTERM, not SIGINT: a shell's background job (and all it starts) has SIGINT ignored
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(INTERRUPT_WAIT_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            stop(copy)
            raise
    data = _json(out[:OUTPUT_LIMIT])
    if proc.returncode != 0 or data.get("status") not in ("ready", "started"):
        stop(copy)  # a start that failed half-way may have left a supervisor: down is harmless otherwise
        findings = [f for f in data.get("findings") or [] if isinstance(f, dict)]
        errors = [str(f.get("title")) for f in findings if f.get("severity") == "error"]
        why = errors[0] if errors else f"up exited {proc.returncode}; its log: {log}"
        raise StartFailed(why[:300], findings[:10])
    try:
        return Started(
            copy,
            str(data["base_url"]).rstrip("/"),
            str(data["served_model_name"]),
            _seconds(data.get("seconds_to_ready")),
            Path(data["log_path"]) if isinstance(data.get("log_path"), str) else None,
        )
    except (KeyError, TypeError):
        stop(copy)
        raise TQError(
            "tqdeploy up --json printed no base_url", "update tqdeploy; up must print tqdeploy.up/1"
        ) from None


def _seconds(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def _json(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
