"""Every example on a lint rule's page (checks/docs/TQ3xx.md, `## Catches` / `## Passes`) is run through
`tqdeploy lint`: a Catches example must report the page's own id, a Passes example must not.

An example is one `backticked` line: a command or script line (`vllm serve ...`, `docker run ...`,
`export VAR=...; vllm serve ...`), or `tqdeploy lint OPTIONS -- COMMAND` when the rule needs options.
DIR in an example is the checkpoint folder of the model the command serves (Qwen/Qwen3.6-27B: here the
fixture tests/fixtures/models/qwen3.6-27b).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "checks" / "docs"
MODELS = REPO / "tests" / "fixtures" / "models"
# Pages whose examples need what this suite does not have, and why.
NOT_RUN = {
    "TQ312": "vLLM's own parser rejecting what the schema checks accept: needs vLLM importable in the "
    "interpreter that runs tqdeploy (tests/test_lint_live.py runs the real parser on its own cases)",
}
_EXAMPLE = re.compile(r"^`(.+)`$")


def examples(page: Path) -> dict[str, list[str]]:
    """{"Catches": [...], "Passes": [...]}: the backticked lines under each heading."""
    out: dict[str, list[str]] = {}
    section = None
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        m = _EXAMPLE.match(line.strip())
        if section in ("Catches", "Passes") and m:
            out.setdefault(section, []).append(m.group(1))
    return out


def _cases():
    from tqdeploy.lint.rules import load_rules

    for rid in sorted(load_rules()):
        if rid in NOT_RUN:
            continue
        for section, lines in examples(DOCS / f"{rid}.md").items():
            for i, line in enumerate(lines):
                yield pytest.param(rid, section, line, id=f"{rid}-{section}-{i}")


def checkpoint(command: str) -> Path:
    """The fixture checkpoint of the model `vllm serve REPO/NAME` names: tests/fixtures/models/<name>."""
    words = shlex.split(command)
    repo = words[words.index("serve") + 1]
    path = MODELS / repo.rsplit("/", 1)[-1].lower()
    assert (path / "config.json").is_file(), f"no fixture checkpoint for {repo} in {MODELS}"
    return path


def lint_example(run_cli, tmp_path: Path, example: str) -> set[str]:
    """Ids `tqdeploy lint` reports for one example; the command goes in a script file, as an operator's would."""
    options: list[str] = []
    command = example
    if example.startswith("tqdeploy lint "):
        head, sep, command = example[len("tqdeploy lint ") :].partition(" -- ")
        assert sep, f"{example!r}: a tqdeploy lint example gives the command after ` -- `"
        options = [str(checkpoint(command)) if tok == "DIR" else tok for tok in shlex.split(head)]
    python = "vllm serve" not in command and ("LLM(" in command or "EngineArgs(" in command)
    script = tmp_path / ("snippet.py" if python else "serve.sh")  # TQ315's examples are Python snippets
    script.write_text(command + "\n", encoding="utf-8")
    code, out, err = run_cli("lint", "--json", "--no-live", *options, "--file", str(script))
    assert code in (0, 1), f"{example!r}: exit {code}: {err}"
    return {f["id"] for f in json.loads(out)["findings"]}


@pytest.mark.parametrize("rid,section,example", list(_cases()))
def test_page_example(run_cli, tmp_path, rid, section, example):
    ids = lint_example(run_cli, tmp_path, example)
    if section == "Catches":
        assert rid in ids, f"{rid}.md Catches `{example}` reports {sorted(ids)}"
    else:
        assert rid not in ids, f"{rid}.md Passes `{example}` reports {rid}"


def test_every_lint_page_has_examples_that_run():
    from tqdeploy.lint.rules import load_rules

    for rid in sorted(load_rules()):
        found = examples(DOCS / f"{rid}.md")
        assert found.get("Catches") and found.get("Passes"), f"{rid}.md needs ## Catches and ## Passes examples"
    assert set(NOT_RUN) <= set(load_rules())


def test_every_page_documents_a_registered_check_or_rule():
    import tqdeploy.doctor.checks  # noqa: F401  (registers the doctor's checks)
    from tqdeploy.doctor.registry import REGISTRY
    from tqdeploy.lint.rules import load_rules

    lint_ids, doctor_ids = set(load_rules()), set(REGISTRY)
    assert not lint_ids & doctor_ids, "a finding id belongs to one registry"
    # TQ300: the doctor's "launch command valid" finding, made by doctor.run when lint reports nothing.
    documented = {p.stem for p in DOCS.glob("TQ*.md")}
    assert {d for d in documented if d < "TQ400"} == lint_ids | doctor_ids | {"TQ300"}


def test_every_runtime_page_names_a_finding_the_code_makes():
    """TQ4xx findings (up, profile, connect) are made at run time, not by a registry: each page's id must
    still be one the code emits, and each id the code emits must have a page."""
    import re

    source = "".join(p.read_text(encoding="utf-8") for p in (DOCS.parents[1] / "tool" / "tqdeploy").rglob("*.py"))
    emitted = set(re.findall(r'"(TQ4\d\d)"', source))
    documented = {p.stem for p in DOCS.glob("TQ4*.md")}
    assert emitted and documented == emitted, (sorted(documented - emitted), sorted(emitted - documented))
