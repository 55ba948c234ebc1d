"""What tqdeploy tells a user to open or run exists for a wheel user (issue 21): no message, rendered script or
explain page's Fix sends them to a file only a checkout has (docs/*.md, scripts/, README, a make target).

Read from the real sources: every string constant of the package that is not a docstring (messages and
remediations are such constants), every template line that is not a comment, every page's Fix section.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "tool" / "tqdeploy"
CHECKOUT_ONLY = re.compile(
    r"\bdocs/[\w.-]+\.md|\bscripts/[\w./-]+|`make [\w-]+`|\bmake (install|test|run|vllm[\w-]*)\b|README|tests/fixtures"
)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                found.add(id(body[0].value))
    return found


def _messages(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
    ]


def test_the_scan_finds_a_checkout_only_reference():
    # the pattern catches each spelling the issue met, and leaves vLLM's own doc paths and plain words alone
    for text in ("see docs/build.md", "start dockerd (scripts/start-dockerd.sh)", "`make install` in a checkout"):
        assert CHECKOUT_ONLY.search(text), text
    for text in ("vLLM's docs/usage/security", "make room for the KV cache", "make the socket readable"):
        assert not CHECKOUT_ONLY.search(text), text


def test_no_message_of_the_package_names_a_file_the_wheel_lacks():
    found = [
        f"{path.relative_to(REPO)}:{line}: {text[:100]!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in _messages(path)
        if CHECKOUT_ONLY.search(text)
    ]
    assert found == []


def test_no_rendered_line_outside_a_comment_names_a_file_the_wheel_lacks():
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sorted((REPO / "templates").rglob("*.j2"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if CHECKOUT_ONLY.search(line) and not line.lstrip().startswith(("#", "{#", "//"))
    ]
    assert found == []


def test_no_line_of_an_embedded_spec_names_a_file_the_wheel_lacks():
    # its comments too: `tqdeploy build` copies the spec into the build folder, where its reader follows them
    found = [
        f"{path.name}:{number}"
        for path in sorted((PACKAGE / "spec" / "defaults").glob("*.toml"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if CHECKOUT_ONLY.search(line)
    ]
    assert found == []


def test_no_fix_of_an_explain_page_names_a_file_the_wheel_lacks():
    found = []
    for page in sorted((REPO / "checks" / "docs").glob("*.md")):
        fix = re.search(r"^## Fix\n(.*?)(?=^## |\Z)", page.read_text(encoding="utf-8"), re.S | re.M)
        if fix and CHECKOUT_ONLY.search(fix.group(1)):
            found.append(page.name)
    assert found == []


def test_a_spec_error_points_to_init_which_the_wheel_has(run_cli, tmp_path):
    spec = tmp_path / "tqdeploy.toml"
    spec.write_text("schema = 1\n[model]\nrepo = 5\n", encoding="utf-8")
    code, _, err = run_cli("build", str(spec), "--out", str(tmp_path / "out"))
    assert code == 2 and "model.repo must be" in err, err
    assert "docs/build.md" not in err and "tqdeploy init --out FILE" in err, err
    spec.write_text("schema = 1\n[model\n", encoding="utf-8")
    code, _, err = run_cli("build", str(spec), "--out", str(tmp_path / "out"))
    assert code == 2 and "invalid TOML" in err and "tqdeploy init --out FILE" in err, err
