"""TQ125: every probe that failed, as a finding (its section of the snapshot is empty)."""

from __future__ import annotations

from tqdeploy.doctor.registry import HostInputs, Verdicts, host_check, passed, warn


@host_check("TQ125", "probes", "host probes completed")
def probe_errors(ctx: HostInputs) -> Verdicts:
    errors = dict(ctx.host.probe_errors)
    if not ctx.host.driver.get("present"):
        errors.pop("nvml", None)  # reported by TQ101 with its remediation
    if not errors:
        return passed({"probes": len(ctx.host.probe_seconds)}, title="all host probes completed")
    return [
        warn(
            {"probe": name, "error": msg},
            "the checks that need it are skipped; re-run with TQDEPLOY_DEBUG=1 "
            "and report it if the cause is not obvious",
            title=f"probe {name} failed",
        )
        for name, msg in sorted(errors.items())
    ]
