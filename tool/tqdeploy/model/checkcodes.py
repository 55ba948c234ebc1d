"""Which check reports each of model.compat's rule codes (TP_HEADS, TQ_HYBRID_BUG, ...): the codes carry no id.

The doctor stamps them as its TQ203-TQ206 checks and lint as TQ340-TQ343; `plan` runs the same rules against a
host, as the doctor's checks do, so it reports them under the doctor's ids (the code stays in the evidence).
Beside the rules, low in the layers, so that plan and explain (tqdeploy.checkids) read one mapping.
"""

from __future__ import annotations

# compat code prefix -> (the doctor check that runs that rule, its area)
COMPAT_CHECKS = {
    "TP_": ("TQ203", "model"),
    "MML_": ("TQ204", "model"),
    "TQ_": ("TQ205", "model"),
    "WEIGHTS_": ("TQ206", "model"),
    "held-memory": ("TQ107", "gpu"),  # plan.host.held_memory_problem: TQ107's rule on a planned host
}


def check_for_code(code: str) -> tuple[str, str] | None:
    """(TQ id, area) of the check that reports a compat rule's code, or None for a code no check runs."""
    for prefix, found in COMPAT_CHECKS.items():
        if code.startswith(prefix):
            return found
    return None
