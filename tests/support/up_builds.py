"""Build directories of the tiny CPU demo for `tqdeploy up` tests, and the "nothing left" assertions.

Each build is the embedded tiny-cpu-demo spec with a free port (and optional vLLM flags), rendered by the
real `tqdeploy build`, with the tiny generated model copied where serve.sh expects it (models/tiny).
Keyed like the spec (server.api_key_file = ./secrets/vllm-api-key): the build itself creates the key file
with a random key, so every `up` test runs the path a real deployment takes; ``build_key(build)`` and
``key_headers(build)`` give it to the test's own requests. ``keyed=False`` drops the key from the spec.
The real CLI runs as a subprocess (`up` leaves a detached supervisor behind on purpose).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.vllm_server import CACHE, VLLM_PYTHON, free_port, tiny_model_dir

REPO = Path(__file__).resolve().parents[2]
DEMO_SPEC = REPO / "tool" / "tqdeploy" / "deployspec" / "defaults" / "tiny-cpu-demo.toml"
TQDEPLOY = Path(sys.executable).parent / "tqdeploy"
UP_TIMEOUT_S = 420


KEY_LINE = 'api_key_file = "./secrets/vllm-api-key"\n'
KEY_FILE = Path("secrets") / "vllm-api-key"


def make_build(
    root: Path, *, extra_args: list[str] | None = None, max_model_len: int = 512, keyed: bool = True
) -> tuple[Path, int]:
    port = free_port()
    text = DEMO_SPEC.read_text()
    assert KEY_LINE in text, "the demo spec is keyed like the default"
    # These builds serve the random tiny model (content does not matter here; it starts faster than SmolLM2).
    text = text.replace('path = "./models/smollm2"', 'path = "./models/tiny"')
    text = text.replace('served_name = "smollm2-135m-instruct"', 'served_name = "tiny"')
    text = text.replace("port = 8000", f"port = {port}")
    text = text.replace("max_model_len = 2048", f"max_model_len = {max_model_len}")
    if extra_args:
        text = text.replace("extra_args = []", "extra_args = " + json.dumps(extra_args))
    if not keyed:
        text = text.replace(KEY_LINE, "")
    root.mkdir(parents=True, exist_ok=True)
    spec = root / "spec.toml"
    spec.write_text(text)
    build = root / "build"
    subprocess.run([str(TQDEPLOY), "build", str(spec), "--out", str(build)], check=True, capture_output=True)
    assert (build / KEY_FILE).is_file() == keyed  # build created it, or there is none to create
    shutil.copytree(tiny_model_dir(), build / "models" / "tiny", ignore=shutil.ignore_patterns(".complete"))
    return build, port


def no_answer_check() -> tuple[str, ...]:
    """`up --no-check` where this tqdeploy checks answers after ready: a stand-in server (tests/hostile) answers
    /health and /v1/models only, so its `up` tests the start, not the answers."""
    import inspect

    from tqdeploy.commands.up import up

    return ("--no-check",) if "check" in inspect.signature(up).parameters else ()


def build_key(build: Path) -> str | None:
    """The key `tqdeploy build` wrote for this build (None: unkeyed)."""
    path = build / KEY_FILE
    return path.read_text(encoding="utf-8").strip() if path.is_file() else None


def key_headers(build: Path) -> dict[str, str]:
    key = build_key(build)
    return {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}


def env() -> dict[str, str]:
    """The shared compile cache (warm starts are ~30 s shorter) and the CPU vLLM's python."""
    e = dict(os.environ)
    e["VLLM_CACHE_ROOT"] = str(CACHE / "vllm")
    e["TQDEPLOY_VLLM_PYTHON"] = str(VLLM_PYTHON)
    e["NO_COLOR"] = "1"
    return e


def tq(
    *args: str, timeout: float = UP_TIMEOUT_S + 60, extra_env: dict | None = None, cpus: set[int] | None = None
) -> tuple[int, dict | None, str]:
    """Run the real CLI; (exit code, parsed JSON stdout or None, stderr). `cpus`: the CPU affinity it and
    everything it starts inherit (what `taskset -c` would give). `up` gets --no-check unless the test asks for
    --check: the tiny model has random weights, its answers are garbage by design (docs/answers.md)."""
    if args and args[0] == "up" and not {"--check", "--no-check"} & set(args):
        args = ("up", "--no-check", *args[1:])
    proc = subprocess.run(
        [str(TQDEPLOY), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env() | (extra_env or {}),
        preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
    )
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        data = None
    return proc.returncode, data, proc.stderr + proc.stdout


def live_members(build: Path, pgid: int | None = None) -> list[tuple[int, str]]:
    """(pid, comm) of every live process carrying the deployment's marker or in a group it leads, and of
    the recorded group `pgid` (by /proc, whatever the marker says: a test's check that nothing is left)."""
    from tqdeploy.runtime.procs import deployment_procs, live_procs
    from tqdeploy.runtime.state import deployment_marker

    found = {p.pid: p.title for p in deployment_procs(deployment_marker(build))}
    if pgid and pgid > 1:
        found |= {p.pid: p.title for p in live_procs() if p.pgid == pgid and p.pid != os.getpid()}
    return sorted(found.items())


def port_listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def assert_nothing_left(build: Path, pgid: int | None, port: int) -> None:
    deadline = time.monotonic() + 10
    while live_members(build, pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = live_members(build, pgid)
    assert not left, f"processes left running: {left}"
    vllm_any = [t for _, t in left if t.startswith("VLLM::")]
    assert not vllm_any
    assert not port_listening(port), f"port {port} still accepts connections"


def kill_leftovers(build: Path) -> None:
    """Last-resort cleanup of a failed test: the deployment's own processes, by pid."""
    import signal

    for pid, _ in live_members(build):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@contextmanager
def started(
    root: Path,
    extra_env: dict | None = None,
    *,
    model: Path | None = None,
    max_model_len: int = 512,
    up_args: tuple[str, ...] = (),
) -> Iterator[tuple[Path, int, dict]]:
    """A keyed CPU demo build under `root`, started with `tqdeploy up` (its JSON answer), stopped by `down` and
    cleared by pid afterwards, however the test ended. `model`: another checkpoint served instead of the tiny one
    (linked where serve.sh looks), e.g. the real model for the answer check."""
    build, port = make_build(root, max_model_len=max_model_len)
    if model is not None:
        shutil.rmtree(build / "models" / "tiny")
        (build / "models" / "tiny").symlink_to(model, target_is_directory=True)
    rc, up, output = tq("up", str(build), "--json", *up_args, extra_env=extra_env)
    try:
        assert rc == 0 and up is not None, output[-3000:]
        yield build, port, up
    finally:
        tq("down", str(build), "--json", timeout=120)
        kill_leftovers(build)
