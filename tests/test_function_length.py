"""No function of tool/tqdeploy is longer than MAX_LINES (issue 36 item 5): a long function hides its steps, and the
steps are what a reader, a test and a reviewer need to name.

A function's length runs from its `def` line to its last line: the signature counts (a typer command's options are
part of what the reader must hold), decorators do not. Methods and nested functions are measured each on their own,
named with their class or enclosing function (`Class.method`, `outer.inner`).

There is no allow-list: the 20 functions that were longer on 2026-12-05 (spec_problems 130 lines, make_plan 116, ...)
were split into named steps; a function that grows past the limit fails with its path, name and length.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tool" / "tqdeploy"
MAX_LINES = 60

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def function_lengths(source: str) -> dict[str, int]:
    """Qualified name -> lines from `def` to the function's last line, for every function in one module."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, FunctionNode):
                name = f"{prefix}{child.name}"
                # end_lineno is set by the parser (Python >= 3.8); lineno is the `def` line, after any decorator
                lengths[name] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)  # a def under `if TYPE_CHECKING:` or in a try block is still the module's

    visit(ast.parse(source), "")
    return lengths


def long_functions(package: Path, limit: int) -> dict[str, int]:
    """'path:name' -> length for every function of the package's modules longer than limit lines."""
    found: dict[str, int] = {}
    for path in sorted(package.rglob("*.py")):
        for name, length in function_lengths(path.read_text(encoding="utf-8")).items():
            if length > limit:
                found[f"{path.relative_to(package).as_posix()}:{name}"] = length
    return found


def test_no_function_is_longer_than_the_limit():
    offenders = long_functions(PACKAGE, MAX_LINES)
    report = "\n".join(f"  {key}: {n} lines" for key, n in sorted(offenders.items(), key=lambda kv: -kv[1]))
    assert not offenders, f"functions longer than {MAX_LINES} lines (split them into named steps):\n{report}"


def test_the_measure_counts_the_signature_and_not_the_decorators():
    source = (
        "import functools\n"
        "@functools.cache\n"  # decorators: not counted
        "def f(\n"
        "    a,\n"
        "    b,\n"
        "):\n"
        "    def inner():\n"
        "        return 1\n"
        "    return inner\n"
        "class C:\n"
        "    async def m(self):\n"
        "        pass\n"
        "if True:\n"
        "    def g(): pass\n"
    )
    assert function_lengths(source) == {"f": 7, "f.inner": 2, "C.m": 2, "g": 1}


def test_a_long_function_is_named_with_its_path_and_length(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    lines = lambda n, indent: "".join(f"{indent}x{i} = {i}\n" for i in range(n))  # noqa: E731
    (package / "sub" / "mod.py").write_text("class K:\n    def long(self):\n" + lines(61, " " * 8))  # 62 lines
    (package / "short.py").write_text("def at_the_limit():\n" + lines(59, " " * 4))  # 60 lines: allowed
    assert long_functions(package, MAX_LINES) == {"sub/mod.py:K.long": 62}
