"""A start whose engine died, told from its log: a failed start, classified with the same TQ4xx findings
`up` gives (tqdeploy.runtime.classify), not a timeline that is "100% attributed" up to the crash."""

from __future__ import annotations

from pathlib import Path

from tqdeploy.findings import Finding
from tqdeploy.runtime.classify import StartContext, classify_exit, classify_log, root_cause
from tqdeploy.runtime.logstamp import split
from tqdeploy.vllmfacts.logpatterns import milestones


def failed_start(log_text: str, build_dir: Path | None = None) -> Finding | None:
    """The finding for a start that failed before it was ready; None for a start that came up, or a log that
    ends while it is still starting without an error (cut short, not failed)."""
    lines = [split(line)[1] for line in log_text.splitlines()]
    ready = next(m.pattern for m in milestones(None) if m.key == "app_ready")  # worded alike in every release
    if any(ready.search(line) for line in lines):
        return None
    ctx = StartContext(build_dir=str(build_dir) if build_dir else "BUILD")
    if classify_log(lines, ctx) is None and root_cause(lines) is None:
        return None
    finding = classify_exit(lines, None, ctx)
    finding.title = f"the start failed: {finding.title}"
    finding.evidence.pop("exit_code", None)  # a saved log carries no exit code
    finding.area = "start-up"
    return finding
