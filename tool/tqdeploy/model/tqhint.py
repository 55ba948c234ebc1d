"""``turbo_quant_config`` in config.json: tqdeploy's own deployment hint (vLLM reads no such field).

Documented meaning (docs/plan.md, checks/docs/TQ202.md):
  {"preset": "turboquant_4bit_nc"}            a vLLM --kv-cache-dtype preset, or
  {"key_bits": 4, "value_bits": 4}            bits mapped to the preset with those bits,
  optional "skip_layers": [0, 1, 62, 63]      extra layers kept at model dtype
                                              (vLLM's --kv-cache-dtype-skip-layers).
Validated here; a valid hint becomes plan's and build's default KV dtype. Unknown keys are kept out
and reported: vLLM ignores the whole field, so nothing there changes what vLLM does.
"""

from __future__ import annotations

from typing import Any

from tqdeploy.findings import Finding, Severity
from tqdeploy.model.tqdata import preset_for_bits, presets

KNOWN_KEYS = ("preset", "key_bits", "value_bits", "skip_layers")
FINDING_ID = "TQ202"  # the doctor check that reports them (checks/docs/TQ202.md)


def problem(severity: str, message: str, fix: str) -> Finding:
    return Finding(FINDING_ID, Severity(severity), message, remediation=fix, location="turbo_quant_config")


def parse_hint(raw: Any, num_layers: int) -> tuple[dict[str, Any] | None, list[Finding]]:
    """(parsed hint or None, problems). Problems carry severity error or warn."""
    if raw is None:
        return None, []
    fix_shape = 'write {"preset": "turboquant_4bit_nc"} or {"key_bits": 4, "value_bits": 4}'
    if not isinstance(raw, dict):
        return None, [problem("error", f"turbo_quant_config is a {type(raw).__name__}, not an object", fix_shape)]
    problems: list[Finding] = []
    unknown = sorted(k for k in raw if k not in KNOWN_KEYS)
    if unknown:
        problems.append(
            problem(
                "warn",
                f"turbo_quant_config has keys tqdeploy does not define ({', '.join(unknown)}); "
                "vLLM ignores the whole field, so they change nothing",
                "remove them; enable TurboQuant with --kv-cache-dtype turboquant_4bit_nc",
            )
        )
    preset = raw.get("preset")
    by_bits = _preset_by_bits(raw, problems, fix_shape)
    if preset is not None and preset not in presets():
        problems.append(
            problem(
                "error",
                f"turbo_quant_config preset {preset!r} is not a vLLM TurboQuant preset",
                f"use one of {', '.join(presets())}",
            )
        )
        preset = None
    if preset and by_bits and preset != by_bits:
        problems.append(
            problem(
                "error",
                f"turbo_quant_config preset {preset} contradicts its bits ({by_bits})",
                "keep either preset or key_bits/value_bits",
            )
        )
    chosen = preset or by_bits
    if chosen is None and not any(p.severity is Severity.ERROR for p in problems):
        problems.append(problem("error", "turbo_quant_config names no preset and no bits", fix_shape))
    skip = _skip_layers(raw, num_layers, problems)
    if any(p.severity is Severity.ERROR for p in problems):
        return None, problems
    return {"kv_cache_dtype": chosen, "skip_layers": sorted(set(skip))}, problems


def _preset_by_bits(raw: dict[str, Any], problems: list[Finding], fix_shape: str) -> str | None:
    """The preset the hint's key_bits/value_bits name (None when not given or not valid; why goes to problems)."""
    if "key_bits" not in raw and "value_bits" not in raw:
        return None
    kb, vb = raw.get("key_bits"), raw.get("value_bits")
    if not (isinstance(kb, int) and isinstance(vb, int)) or isinstance(kb, bool) or isinstance(vb, bool):
        problems.append(
            problem("error", "turbo_quant_config needs both key_bits and value_bits as integers", fix_shape)
        )
        return None
    by_bits = preset_for_bits(kb, vb)
    if by_bits is None:
        valid = ", ".join(f"{p['key_bits']}/{p['value_bits']}" for p in presets().values())
        problems.append(
            problem(
                "error",
                f"no vLLM TurboQuant preset has key_bits={kb} value_bits={vb}",
                f"use one of key/value bits {valid}",
            )
        )
    return by_bits


def _skip_layers(raw: dict[str, Any], num_layers: int, problems: list[Finding]) -> list[int]:
    """The hint's skip_layers ([] when absent or not a list of ints); what is wrong goes to problems."""
    skip = raw.get("skip_layers", [])
    if not isinstance(skip, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in skip):
        problems.append(
            problem(
                "error", "turbo_quant_config skip_layers must be a list of layer indices", 'e.g. "skip_layers": [0, 1]'
            )
        )
        return []
    bad = [i for i in skip if not 0 <= i < num_layers]
    if bad:
        problems.append(
            problem(
                "error",
                f"turbo_quant_config skip_layers {bad} are outside 0..{num_layers - 1}",
                "use layer indices of this model",
            )
        )
    return skip
