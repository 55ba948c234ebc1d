"""Starting a deployment for a cold or warm profile, through `tqdeploy up`'s contract:
`tqdeploy up BUILD --json` (schema tqdeploy.up/1: base_url, served_model_name, log_path, status) and
`tqdeploy down BUILD`; the process runtime keeps vLLM's compile cache at BUILD/.tqdeploy/cache/vllm
(VLLM_CACHE_ROOT) unless set. Driven as a subprocess, so this adapter is the only place that changes
when profile calls up's Python API instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tqdeploy.buildfolder import BuildFolder
from tqdeploy.errors import TQError
from tqdeploy.findings import Finding
from tqdeploy.runtime.deployment import load_deployment
from tqdeploy.runtime.state import read_record
from tqdeploy.runtime.up import running_state

UP_TIMEOUT_S = 900


@dataclass
class Started:
    base_url: str
    log_path: Path
    launched_at: float  # vLLM's launch (state.json started_at), else when `up` was called
    compile_cache: str  # removed | absent | kept
    page_cache: str
    seconds_to_ready: float | None = None


def compile_cache_dir(build: Path) -> Path:
    """The deployment's own compile cache. A VLLM_CACHE_ROOT set by the operator may be shared with other
    deployments: a cold profile refuses to remove it rather than wipe someone else's cache."""
    if os.environ.get("VLLM_CACHE_ROOT"):
        raise TQError(
            f"VLLM_CACHE_ROOT is set ({os.environ['VLLM_CACHE_ROOT']}): a cold profile would remove a cache "
            "that may be shared",
            "unset VLLM_CACHE_ROOT so the deployment uses BUILD/.tqdeploy/cache/vllm, or use --start warm",
        )

    return BuildFolder(build).vllm_cache


def model_dir(build: Path) -> str | None:
    """The checkpoint folder `up` would serve: TQ_MODEL_DIR when set (the process runtime passes it through),
    else the build's own (runtime/deployment.py); None when the build cannot be read (up reports why)."""
    if os.environ.get("TQ_MODEL_DIR"):
        return os.environ["TQ_MODEL_DIR"]

    try:
        return str(load_deployment(build).model_dir)
    except (TQError, OSError, ValueError, KeyError):
        return None


def key_file(build: Path) -> Path | None:
    """The build's server.api_key_file (what its serve.sh exports as VLLM_API_KEY); None without one."""
    try:
        return load_deployment(build).api_key_file
    except (TQError, OSError, ValueError, KeyError):
        return None


def _cli() -> list[str]:
    return [sys.executable, "-m", "tqdeploy"]


def start(build: Path, mode: str) -> Started:
    """Start the deployment; `cold` removes its compile cache first. The OS page cache is not dropped
    (that needs root and slows every other process on the host), so a cold start here still reads the
    weights from memory if they were read recently: the result says so.

    A build that is already running is refused before anything happens: profile starts and stops only what it
    started itself (its cold start would remove the running server's compile cache, and its stop would take down
    a deployment the operator started)."""
    if running_state(build) is not None:
        raise TQError(
            f"{build} is running: `profile --start` times a start of its own and stops it afterwards",
            f"profile the running server with `tqdeploy profile --url URL --log {build}/.tqdeploy/logs/server.log`, "
            f"or stop it first (`tqdeploy down {build}`)",
        )
    cache = compile_cache_dir(build) if mode == "cold" else None
    compile_cache = "kept"
    if cache is not None:
        compile_cache = "removed" if cache.exists() else "absent"
        shutil.rmtree(cache, ignore_errors=True)
    launched = time.time()
    proc = subprocess.run([*_cli(), "up", str(build), "--json"], capture_output=True, text=True, timeout=UP_TIMEOUT_S)
    if proc.returncode == 1:  # up ran and reported why the start failed or was refused: findings, not bad input
        failed = _failed(proc.stdout)
        if failed is not None:
            raise failed
    # A server whose answers failed up's check is running: its start is profiled, the check is in the state.
    if proc.returncode != 0 and not _check_failed(proc.stdout):
        raise TQError(
            f"tqdeploy up {build} failed (exit {proc.returncode}): {_why(proc.stdout, proc.stderr)}",
            f"run `tqdeploy up {build}` and `tqdeploy logs {build}` to see why",
        )
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise TQError("tqdeploy up --json printed no JSON", "update tqdeploy; up must print tqdeploy.up/1") from None

    record = read_record(build)  # validated: started_at is a time or None
    started_at = record.started_at if record is not None else None
    return Started(
        data["base_url"].rstrip("/"),
        Path(data["log_path"]),
        started_at if started_at is not None else launched,
        compile_cache,
        "not dropped (weights may come from the OS page cache)",
        data.get("seconds_to_ready"),
    )


class StartFailed(Exception):
    """`up` reported a failed or refused start: its findings (TQ4xx, from runtime/classify.py) and its log."""

    def __init__(self, findings: list[Finding], log_path: Path | None):
        super().__init__("the start failed")
        self.findings = findings
        self.log_path = log_path


def _failed(stdout: str) -> StartFailed | None:
    try:
        data = json.loads(stdout)
        findings = [Finding.from_dict(f) for f in data.get("findings") or []]
        log = data.get("log_path")
    except (ValueError, AttributeError, KeyError, TypeError):
        return None
    if data.get("status") not in ("failed", "refused") or not any(f.severity.value == "error" for f in findings):
        return None
    return StartFailed(findings, Path(log) if isinstance(log, str) and log else None)


def _check_failed(stdout: str) -> bool:
    try:
        data = json.loads(stdout)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("status") == "check-failed"


def _why(stdout: str, stderr: str) -> str:
    """up's own reason: the first finding of its JSON, else its last line on stderr."""
    try:
        findings = json.loads(stdout).get("findings") or []
        if findings:
            return str(findings[0].get("title"))
    except (ValueError, AttributeError):
        pass
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    errors = [line.split("error:", 1)[1].strip() for line in lines if "error:" in line]
    return errors[0] if errors else (lines[-1] if lines else "no output")


def stop(build: Path) -> None:
    subprocess.run([*_cli(), "down", str(build)], capture_output=True, text=True, timeout=120)
