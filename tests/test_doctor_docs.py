"""The `## Catches` / `## Passes` examples on the doctor's pages (checks/docs/TQ1xx.md, TQ2xx.md) are run:
each is a snapshot field set on the recorded H200 host (`driver.cuda_driver = 12080`); the page's check
must then report a warning or an error for Catches, and only ok for Passes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import tqdeploy.doctor.checks  # noqa: F401  registers the checks
from support.doctor_hosts import h200
from tqdeploy.doctor.registry import REGISTRY, CheckContext
from tqdeploy.snapshot import HostSnapshot

DOCS = Path(__file__).resolve().parent.parent / "checks" / "docs"
_ASSIGNMENT = re.compile(r"`([A-Za-z_][\w.\[\]]*) = ([^`]+)`")
_STEP = re.compile(r"([A-Za-z_]\w*)|\[(\d+)\]")


def assignments(page: Path) -> dict[str, list[list[tuple[str, object]]]]:
    """{"Catches": [[(path, value), ...] per example line], "Passes": [...]}."""
    out: dict[str, list[list[tuple[str, object]]]] = {}
    section = None
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        found = [(path, json.loads(value)) for path, value in _ASSIGNMENT.findall(line)]
        if section in ("Catches", "Passes") and found:
            out.setdefault(section, []).append(found)
    return out


def apply(data: dict, path: str, value: object) -> None:
    """Set data[path] for a path such as gpus[0].remapped_rows.pending; every step but the last must exist."""
    steps = [name or int(index) for name, index in _STEP.findall(path)]
    node = data
    for step in steps[:-1]:
        node = node[step]
    assert steps[-1] in node if isinstance(node, dict) else True, f"{path}: no such field in the snapshot"
    node[steps[-1]] = value


def _cases():
    for cid in sorted(REGISTRY):
        for section, examples in assignments(DOCS / f"{cid}.md").items():
            for i, edits in enumerate(examples):
                yield pytest.param(cid, section, edits, id=f"{cid}-{section}-{i}")


CASES = list(_cases())


@pytest.mark.parametrize("cid,section,edits", CASES)
def test_page_example(cid, section, edits):
    data = h200()
    for path, value in edits:
        apply(data, path, value)
    ctx = CheckContext(host=HostSnapshot.from_dict(data), options={"vllm_version": "0.32.0"})
    severities = {f.severity.value for f in REGISTRY[cid].run(ctx)}
    if section == "Catches":
        assert severities & {"warn", "error"}, f"{cid}.md Catches {edits}: {severities}"
    else:
        assert severities == {"ok"}, f"{cid}.md Passes {edits}: {severities}"


def test_pages_with_examples_have_both_sections():
    pages = {c.values[0] for c in CASES}
    assert len(pages) >= 5
    for cid in pages:
        found = assignments(DOCS / f"{cid}.md")
        assert found.get("Catches") and found.get("Passes"), cid
