"""A loaded spec is read by attribute (spec.vllm.kv_cache_dtype): its sections are frozen dataclasses, so a read by
string key (spec["vllm"]) fails at run time, and where the spec is typed `object` (a Deployment's) mypy cannot
see it. This scan names every such read left in the package, with its file and line (issue 36: 39 reads in 15
files were converted; a merge that brings an old one back fails here instead of in `up`)."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tool" / "tqdeploy"
SECTIONS = ("", "model", "vllm", "image", "server", "resources", "storage")
# spec["vllm"], dep.spec['model'], spec.data[...]: a Spec read as the dict it no longer is
_SECTION = "|".join(SECTIONS)
STRING_READ = re.compile(rf"\bspec(?:\.data)?\[\s*[\"'](?:{_SECTION})[\"']\s*\]|\bspec\.data\b")


def test_no_spec_is_read_by_string_key():
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if STRING_READ.search(line)
    ]
    assert not found, "read the typed sections instead (spec.vllm.max_model_len):\n" + "\n".join(found)


def test_the_scan_sees_the_reads_it_forbids():
    for old in ('v = dep.spec["vllm"]', "spec['model']['path']", 'spec[""]["name"]', "spec.data"):
        assert STRING_READ.search(old), old
    for fine in ("spec.vllm.max_model_len", 'data["vllm"]["version"]', 'window_spec["layers"]', 'spec["keywords"]'):
        assert not STRING_READ.search(fine), fine
