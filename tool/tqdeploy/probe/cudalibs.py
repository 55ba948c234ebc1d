"""CUDA runtime and cuDNN as a server process would load them, without importing torch.

Two sources: the nvidia-* wheels in the Python environment (what torch/vLLM load first, through
their RPATHs) and the system linker cache (`ldconfig -p`). They differ in practice: the recorded
H200 host had cuDNN 9.19 from the nvidia-cudnn-cu13 wheel in use by torch and a different system
libcudnn (tests/fixtures/hosts/h200-1gpu/torch.txt and host.txt; docs/facts.md, "Machines").
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

WHEEL_PREFIXES = ("nvidia-cudnn-", "nvidia-cuda-runtime", "nvidia-nccl-", "nvidia-cublas-")
LDCONFIG_LIBS = {
    "cudnn": "libcudnn",  # cuDNN 9 ships split libraries (libcudnn_ops.so.9...)
    "cudart": "libcudart.so",
    "cuda": "libcuda.so",
    "nccl": "libnccl.so",
}


def _dist_info_versions(paths: list[str]) -> dict[str, str]:
    """{name: version} of the matching *.dist-info folders on paths, from their names alone
    ({name}-{version}.dist-info, the installed-wheel layout): reading every distribution's METADATA as
    importlib.metadata.distributions() does took ~70 ms of the doctor's run in a venv of 100 packages."""
    found: dict[str, str] = {}
    prefixes = tuple(p.replace("-", "_") for p in WHEEL_PREFIXES)
    for folder in paths:
        try:
            entries = [e.name for e in os.scandir(folder or ".") if e.name.endswith(".dist-info")]
        except OSError:  # a zip on sys.path, a folder that is gone
            continue
        for entry in entries:
            name, _, version = entry[: -len(".dist-info")].partition("-")
            name = name.lower().replace(".", "_")
            if name.startswith(prefixes) and version:
                found.setdefault(name.replace("_", "-"), version)  # first on sys.path wins, as imports do
    return found


def probe_wheels(distributions: Callable[[], Any] | None = None) -> dict[str, str]:
    if distributions is None:
        return dict(sorted(_dist_info_versions(sys.path).items()))
    listed: Callable[[], Any] = distributions
    found: dict[str, str] = {}
    for dist in listed():
        name = (dist.metadata.get("Name") or "").lower().replace("_", "-")
        if name.startswith(WHEEL_PREFIXES):
            found[name] = dist.version
    return dict(sorted(found.items()))


def parse_ldconfig(text: str) -> dict[str, list[str]]:
    """Paths per library family from `ldconfig -p` lines like "libcudnn.so.9 (libc6,x86-64) => /lib/..."."""
    out: dict[str, list[str]] = {k: [] for k in LDCONFIG_LIBS}
    for line in text.splitlines():
        m = re.match(r"\s*(\S+)\s+\(.*\)\s+=>\s+(\S+)", line)
        if not m:
            continue
        soname, path = m.groups()
        for key, prefix in LDCONFIG_LIBS.items():
            if soname.startswith(prefix):
                out[key].append(f"{soname} => {path}")
    return out


def with_real_name(entry: str, realpath: Callable[[str], str] = os.path.realpath) -> str:
    """ "libcudnn_ops.so.9 => /lib/.../libcudnn_ops.so.9" + " (libcudnn_ops.so.9.8.0)": the soname carries only
    the major version, the file the symlink chain ends at carries the full one."""
    path = entry.rpartition(" => ")[2]
    real = os.path.basename(realpath(path))
    return entry if real == os.path.basename(path) else f"{entry} ({real})"


def probe_ldconfig(run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> dict[str, list[str]]:
    for exe in ("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"):
        try:
            res = run([exe, "-p"], capture_output=True, text=True, timeout=5)
        except (FileNotFoundError, PermissionError):
            continue
        return {family: [with_real_name(e) for e in entries] for family, entries in parse_ldconfig(res.stdout).items()}
    raise FileNotFoundError("ldconfig not found")


def probe_cuda_libs() -> dict[str, Any]:
    # The wheels are those of the Python environment the doctor runs in; a server started from another
    # venv or an image loads its own, so the environment is recorded beside them.
    return {"wheels": probe_wheels(), "python_env": sys.prefix, "ldconfig": probe_ldconfig()}
