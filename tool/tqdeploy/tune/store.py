"""Results per dtype under BUILD/.tqdeploy/tune/results/<dtype>.json, each with the fingerprint of what it was
measured on: the model files (answers/reference.py's digest), the vLLM release and variant, the host (CPU model,
cores, memory, GPU models), the build's vLLM settings other than the KV dtype, and the workload. A re-run reuses
a result whose fingerprint is today's and measures the rest; a file that is not what tune wrote is measured
again, never trusted. The latency targets are not in it: goodput is computed from the stored steps each time.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from tqdeploy import jsonin
from tqdeploy.answers.reference import model_files_digest
from tqdeploy.buildfolder import folder, own_dir
from tqdeploy.errors import TQError
from tqdeploy.fsutil import atomic_write_text
from tqdeploy.runtime.deployment import Deployment
from tqdeploy.safeio import read_bytes, read_text

SCHEMA = "tqdeploy.tune-result/1"
RESULT_LIMIT = 1 << 20
GPU_INFO = Path("/proc/driver/nvidia/gpus")


def host_facts() -> dict[str, Any]:
    """What decides the figures on this host, read cheaply (no NVML: the driver's own /proc files)."""

    def read(path: Path) -> str:
        try:
            return read_text(path, 4 << 20, str(path))
        except (OSError, TQError):
            return ""

    cpu = next(
        (ln.split(":", 1)[1].strip() for ln in read(Path("/proc/cpuinfo")).splitlines() if ln.startswith("model name")),
        "",
    )
    mem = next((ln.split()[1] for ln in read(Path("/proc/meminfo")).splitlines() if ln.startswith("MemTotal:")), "")
    gpus: list[str] = []
    if GPU_INFO.is_dir():
        for info in sorted(GPU_INFO.glob("*/information"))[:64]:
            gpus += [ln.split(":", 1)[1].strip() for ln in read(info).splitlines() if ln.startswith("Model:")]
    return {"cpu": cpu[:200], "cores": os.cpu_count(), "mem_kib": mem[:20], "gpus": gpus}


def fingerprint(dep: Deployment, workload: dict[str, Any]) -> dict[str, Any]:
    spec = dep.spec
    settings = {k: v for k, v in spec.vllm.to_dict().items() if k != "kv_cache_dtype"}
    return {
        "model_files": model_files_digest(dep.model_dir)["sha256"],
        "vllm": {"version": spec.vllm_version, "variant": spec.variant, "image": spec.image.base},
        "host": host_facts(),
        "settings": settings | {"gpus": spec.resources.gpus},
        "workload": workload,
    }


def digest(fp: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(fp, sort_keys=True, default=str).encode()).hexdigest()


def results_dir(build: Path) -> Path:
    return own_dir(build, folder(build).state_dir / "tune" / "results")


def save(build: Path, dtype: str, fp: dict[str, Any], result: dict[str, Any]) -> Path:
    path = results_dir(build) / f"{dtype}.json"
    doc = {"schema": SCHEMA, "fingerprint": fp, "fingerprint_sha256": digest(fp), "result": result}
    atomic_write_text(path, json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
    return path


def load(build: Path, dtype: str, fp: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """(the stored result, "") when it was measured on this fingerprint; else (None, why it is measured again)."""
    path = results_dir(build) / f"{dtype}.json"
    if not path.exists():
        return None, "not measured yet"
    try:
        doc = jsonin.loads(read_bytes(path, RESULT_LIMIT, "tune result"), str(path), "remove it")
    except (OSError, TQError) as err:
        return None, f"{path.name} unreadable ({getattr(err, 'message', err)})"
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not valid_result(doc.get("result"), dtype):
        return None, f"{path.name} is not a result tune wrote"
    if doc.get("fingerprint_sha256") != digest(fp):
        stored = doc["fingerprint"] if isinstance(doc.get("fingerprint"), dict) else {}
        changed = sorted(k for k in fp if stored.get(k) != fp[k])
        return None, "measured on another " + (", ".join(changed) or "fingerprint")
    return doc["result"], ""


def valid_result(result: Any, dtype: str) -> bool:
    """The shape the verdict reads: the figures themselves are type-checked where they are used (goodput.py)."""
    return (
        isinstance(result, dict)
        and result.get("dtype") == dtype
        and isinstance(result.get("kv"), dict)
        and isinstance(result.get("steps"), list)
        and all(isinstance(s, dict) for s in result["steps"])
        and isinstance(result.get("quality"), dict)
    )
