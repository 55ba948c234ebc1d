"""The false-advice catalogue: every entry catches its bad example and passes its good one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tqdeploy.lint import lint_script
from tqdeploy.lint.catalogue import load_catalogue, match_text
from tqdeploy.lint.script import find_command

ENTRIES = load_catalogue()
RAW = json.loads((Path(__file__).resolve().parent.parent / "checks" / "false_advice.json").read_text())


def _hits(report, entry) -> list:
    if entry.pattern["kind"] == "rule":
        return [f for f in report.findings if f.id == entry.pattern["rule"]]
    return [f for f in report.findings if f.id == "TQ310" and f.title.startswith(entry.id + ":")]


def test_every_entry_is_complete():
    assert len(ENTRIES) >= 20
    seen = set()
    for raw in RAW["entries"]:
        for key in ("id", "pattern", "why", "replacement", "citation", "bad", "good"):
            assert raw.get(key), f"{raw.get('id')} lacks {key}"
        assert raw["id"] not in seen
        seen.add(raw["id"])
        if raw["pattern"]["kind"] == "text":
            re.compile(raw["pattern"]["regex"])


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_entry_catches_bad_example(entry):
    report = lint_script(entry.bad, live=False)
    hits = _hits(report, entry)
    assert hits, report.to_dict()
    assert entry.replacement in hits[0].remediation or entry.pattern["kind"] == "rule"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_entry_passes_good_example(entry):
    if find_command(entry.good) is None:  # Python, pip or curl lines: only the text patterns apply
        assert not [f for f in match_text(entry.good) if f.title.startswith(entry.id + ":")]
        assert match_text(entry.good) == []
        return
    report = lint_script(entry.good, live=False)
    assert not _hits(report, entry), report.to_dict()


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.tokens is not None], ids=lambda e: e.id)
def test_fixed_command_drops_the_false_advice(entry):
    report = lint_script(entry.bad, live=False)
    assert report.changed
    again = lint_script(report.fixed_command_text, live=False)
    assert not _hits(again, entry), again.to_dict()
    for tok in entry.tokens:
        assert tok in report.fixed_argv


def test_catalogue_finding_replaces_generic_parser_finding():
    report = lint_script("vllm serve m --quantization turboquant --host 127.0.0.1", live=False)
    assert [f.id for f in report.findings] == ["TQ310"]  # not also TQ308 for the same token
    assert report.fixed_argv[-4:-2] == ["--kv-cache-dtype", "turboquant_4bit_nc"]


def test_short_alias_is_caught():
    report = lint_script("vllm serve m -q turbo --host 127.0.0.1", live=False)
    assert [f.id for f in report.findings] == ["TQ310"]
